// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>
#include <cstdint>

// The memory an nghttp2 session allocates from (docs/http2.md, "Memory per connection").
// libnghttp2 makes every session's largest blocks when the session is made: a 16 KiB frame
// buffer, a stream map's 4 KiB table and two 1 KiB HPACK rings, although an idle connection
// writes only the first few hundred bytes of the buffer and, until a stream comes, nothing of the
// others. From the heap, such blocks are usually memory another object touched before (a TLS
// handshake's record buffers are the frame buffer's size), so all of it stays resident for the
// connection's life. Here these blocks come from pages of their own, given back to the kernel
// when the session frees them: pages nghttp2 never writes cost no resident memory. Everything
// else goes to malloc.
namespace sluice::http2 {

/// nghttp2_mem for one session (its user data). Confined to the session's thread; the page pools
/// behind it are shared and lock.
class SessionMemory {
 public:
  /// Blocks larger than this, up to kPagedMax, come from the frame buffer's pool, at any time.
  static constexpr std::size_t kPagedMin = std::size_t{8} * 1024U;
  /// The largest paged block: libnghttp2's frame buffer (16,384 bytes of payload, a 9-byte frame
  /// header and a padding byte) rounded up to whole pages.
  static constexpr std::size_t kPagedMax = std::size_t{20} * 1024U;
  /// While the session is being made, blocks of (kTableMin, kTableMax] get a page each (the
  /// stream map's table) and blocks of (kRingMin, kRingMax] a quarter of a page (the HPACK
  /// tables' rings). Other blocks that size (per stream, per frame) go to malloc: they are
  /// written at once, and many, so pages of their own would cost more.
  static constexpr std::size_t kTableMin = std::size_t{3} * 1024U;
  static constexpr std::size_t kTableMax = std::size_t{4} * 1024U;
  static constexpr std::size_t kRingMin = 512;
  static constexpr std::size_t kRingMax = 1024;

  /// The pools: frame buffers (kPagedMax), tables (kTableMax), rings (kRingMax).
  enum class Pool : std::uint8_t { kFrame, kTable, kRing };

  SessionMemory();
  SessionMemory(const SessionMemory&) = delete;
  SessionMemory& operator=(const SessionMemory&) = delete;
  ~SessionMemory();

  /// What nghttp2_session_*_new3 takes (points into this object).
  [[nodiscard]] nghttp2_mem* mem() noexcept { return &mem_; }
  /// Paged blocks this session holds now (of every pool).
  [[nodiscard]] std::size_t paged() const noexcept;
  /// Paged blocks this session holds now from `pool`.
  [[nodiscard]] std::size_t paged(Pool pool) const noexcept;
  /// Called right after the session is made: its frame-pool block is the frame buffer, and from
  /// now on only the frame pool serves blocks.
  void session_made() noexcept;
  /// Gives the frame buffer's pages back to the kernel; its bytes read as zero afterwards. Only
  /// while the session has nothing to send (no frame is being written in it).
  void release_frame_buffer_pages() noexcept;
  /// How many of the frame buffer's pages are resident now (written: /proc/self/pagemap; 0
  /// without one).
  [[nodiscard]] std::size_t frame_buffer_resident_pages() const;
  /// How many pages of this session's paged blocks are resident now (written; a quarter page's
  /// page counts whoever wrote it).
  [[nodiscard]] std::size_t resident_pages() const;
  /// Slots (of the whole process) kept for `pool`, and how many of those are free.
  static std::size_t pool_slots(Pool pool = Pool::kFrame);
  static std::size_t pool_free_slots(Pool pool = Pool::kFrame);

 private:
  struct Paged {
    void* block = nullptr;
    Pool pool = Pool::kFrame;
  };

  /// A block of `size` bytes; `zero` tells whether its bytes are known to be zero.
  void* allocate(std::size_t size, bool& zero);
  void release(void* ptr);
  void* resize(void* ptr, std::size_t size);
  /// The index of `ptr` among this session's paged blocks, or kMaxPaged.
  [[nodiscard]] std::size_t find(const void* ptr) const noexcept;

  /// A session holds a frame buffer, a table and two rings, and at times a header block being
  /// decoded: a few paged blocks at once; more go to malloc.
  static constexpr std::size_t kMaxPaged = 8;
  nghttp2_mem mem_{};
  std::array<Paged, kMaxPaged> paged_{};
  void* frame_buffer_ = nullptr;
  bool making_ = true;  ///< until session_made(): the table and ring pools serve too
};

}  // namespace sluice::http2
