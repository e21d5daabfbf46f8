// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>

// The memory an nghttp2 session allocates from (docs/http2.md, "Memory per connection").
// libnghttp2 gives every session a 16 KiB frame buffer when it is made, although an idle
// connection writes only its first few hundred bytes (SETTINGS, WINDOW_UPDATE, acknowledgements).
// From the heap, that block is usually memory another object touched before (a TLS handshake's
// record buffers are the same size), so all of it stays resident for the connection's life.
// Here blocks of that size come from pages of their own, handed back to the kernel when the
// session frees them: pages nghttp2 never writes cost no resident memory. Everything else goes
// to malloc.
namespace sluice::http2 {

/// nghttp2_mem for one session (its user data). Confined to the session's thread; the page pool
/// behind it is shared and locks.
class SessionMemory {
 public:
  /// Blocks larger than this, up to kPagedMax, come from the page pool.
  static constexpr std::size_t kPagedMin = std::size_t{8} * 1024U;
  /// The largest paged block: libnghttp2's frame buffer (16,384 bytes of payload, a 9-byte frame
  /// header and a padding byte) rounded up to whole pages.
  static constexpr std::size_t kPagedMax = std::size_t{20} * 1024U;

  SessionMemory();
  SessionMemory(const SessionMemory&) = delete;
  SessionMemory& operator=(const SessionMemory&) = delete;
  ~SessionMemory();

  /// What nghttp2_session_*_new3 takes (points into this object).
  [[nodiscard]] nghttp2_mem* mem() noexcept { return &mem_; }
  /// Paged blocks this session holds now.
  [[nodiscard]] std::size_t paged() const noexcept;
  /// Called right after the session is made: its one paged block is the frame buffer.
  void note_frame_buffer() noexcept;
  /// Gives the frame buffer's pages back to the kernel; its bytes read as zero afterwards. Only
  /// while the session has nothing to send (no frame is being written in it).
  void release_frame_buffer_pages() noexcept;
  /// How many of the frame buffer's pages are resident now (mincore; 0 without one).
  [[nodiscard]] std::size_t frame_buffer_resident_pages() const;
  /// Pages (of the whole process) kept for paged blocks, and how many of those are free.
  static std::size_t pool_slots();
  static std::size_t pool_free_slots();

 private:
  void* allocate(std::size_t size);
  void release(void* ptr);
  void* resize(void* ptr, std::size_t size);
  /// The index of `ptr` among this session's paged blocks, or kMaxPaged.
  [[nodiscard]] std::size_t find(const void* ptr) const noexcept;

  /// A session holds one frame buffer, and at times a header block being decoded: a few paged
  /// blocks at once; more go to malloc.
  static constexpr std::size_t kMaxPaged = 4;
  nghttp2_mem mem_{};
  std::array<void*, kMaxPaged> paged_{};
  void* frame_buffer_ = nullptr;
};

}  // namespace sluice::http2
