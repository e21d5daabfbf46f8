// SPDX-License-Identifier: Apache-2.0
// Paged blocks for libnghttp2's sessions (docs/http2.md, "Memory per connection"): slots carved
// from large anonymous mappings, one pool per slot size. A slot of a page or more has its pages
// given back to the kernel (MADV_DONTNEED) when its block is freed; quarter-page slots share a
// page, given back when none of its slots is taken. So a new session's untouched pages are not
// resident. The mappings themselves stay for the process's life (address space only, a few per
// thousand connections, far under vm.max_map_count).
#include "gateway/http2/session_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::http2 {
namespace {

constexpr std::size_t kPage = 4096;

/// Slots of one size, from mappings of `slots_per_chunk` slots each.
class SlotPool {
 public:
  struct Taken {
    void* slot = nullptr;
    bool zero = false;  ///< its bytes are all zero (fresh or given back pages)
  };

  SlotPool(std::size_t slot_bytes, std::size_t slots_per_chunk)
      : slot_bytes_(slot_bytes), slots_per_chunk_(slots_per_chunk) {}

  [[nodiscard]] std::size_t slot_bytes() const noexcept { return slot_bytes_; }

  /// A slot, or a null one when no mapping can be made.
  Taken take() {
    const std::lock_guard lock(mutex_);
    if (free_.empty() && !grow()) {
      return {};
    }
    void* slot = free_.back();
    free_.pop_back();
    if (!shares_pages()) {
      return {slot, true};
    }
    const auto [chunk, index] = locate(slot);
    ++chunk->used[index / per_page()];
    const bool zero = !chunk->dirty[index];
    chunk->dirty[index] = true;  // whoever holds it may write it
    return {slot, zero};
  }

  /// The slot is free again; its pages go back to the kernel once no slot on them is taken.
  void give_back(void* slot) {
    if (!shares_pages()) {
      ::madvise(slot, slot_bytes_, MADV_DONTNEED);
      const std::lock_guard lock(mutex_);
      free_.push_back(slot);
      return;
    }
    const std::lock_guard lock(mutex_);
    const auto [chunk, index] = locate(slot);
    const std::size_t page = index / per_page();
    if (--chunk->used[page] == 0) {
      ::madvise(chunk->base + page * kPage, kPage, MADV_DONTNEED);
      std::fill_n(chunk->dirty.begin() + static_cast<std::ptrdiff_t>(page * per_page()), per_page(),
                  false);
    }
    free_.push_back(slot);
  }

  std::size_t slots() {
    const std::lock_guard lock(mutex_);
    return chunks_.size() * slots_per_chunk_;
  }
  std::size_t free_slots() {
    const std::lock_guard lock(mutex_);
    return free_.size();
  }

 private:
  /// A mapping, and for quarter-page slots how many slots of each page are taken and which
  /// slots may hold bytes other than zero.
  struct Chunk {
    std::byte* base = nullptr;
    std::vector<std::uint8_t> used;
    std::vector<bool> dirty;
  };

  [[nodiscard]] bool shares_pages() const noexcept { return slot_bytes_ < kPage; }
  [[nodiscard]] std::size_t per_page() const noexcept { return kPage / slot_bytes_; }

  std::pair<Chunk*, std::size_t> locate(const void* slot) {
    const auto* at = static_cast<const std::byte*>(slot);
    for (Chunk& chunk : chunks_) {
      if (at >= chunk.base && at < chunk.base + slots_per_chunk_ * slot_bytes_) {
        return {&chunk, static_cast<std::size_t>(at - chunk.base) / slot_bytes_};
      }
    }
    std::abort();  // a slot of this pool always lies in one of its chunks
  }

  bool grow() {
    const std::size_t bytes = slots_per_chunk_ * slot_bytes_;
    void* mapping = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping == MAP_FAILED) {
      return false;
    }
    Chunk& chunk = chunks_.emplace_back();
    chunk.base = static_cast<std::byte*>(mapping);
    if (shares_pages()) {
      chunk.used.assign(slots_per_chunk_ / per_page(), 0);
      chunk.dirty.assign(slots_per_chunk_, false);
    }
    free_.reserve(free_.size() + slots_per_chunk_);
    for (std::size_t i = slots_per_chunk_; i > 0; --i) {  // (the first slot is taken first)
      free_.push_back(chunk.base + (i - 1) * slot_bytes_);
    }
    return true;
  }

  const std::size_t slot_bytes_;
  const std::size_t slots_per_chunk_;
  std::mutex mutex_;
  std::vector<void*> free_;
  std::vector<Chunk> chunks_;
};

SlotPool& pool_of(SessionMemory::Pool pool) {
  // Never destroyed: sessions may outlive statics. 5 MiB, 1 MiB and 1 MiB of address space per
  // mapping.
  static auto* frames = new SlotPool(SessionMemory::kPagedMax, 256);
  static auto* tables = new SlotPool(SessionMemory::kTableMax, 256);
  static auto* rings = new SlotPool(SessionMemory::kRingMax, 1024);
  switch (pool) {
    case SessionMemory::Pool::kTable:
      return *tables;
    case SessionMemory::Pool::kRing:
      return *rings;
    case SessionMemory::Pool::kFrame:
      break;
  }
  return *frames;
}

/// The pool a block of `size` comes from (`making`: the session is being made), if any.
std::optional<SessionMemory::Pool> pool_for(std::size_t size, bool making) {
  if (size > SessionMemory::kPagedMin && size <= SessionMemory::kPagedMax) {
    return SessionMemory::Pool::kFrame;
  }
  if (making && size > SessionMemory::kTableMin && size <= SessionMemory::kTableMax) {
    return SessionMemory::Pool::kTable;
  }
  if (making && size > SessionMemory::kRingMin && size <= SessionMemory::kRingMax) {
    return SessionMemory::Pool::kRing;
  }
  return std::nullopt;
}

/// Pages of [at, at + size), widened to whole pages, that the process holds resident memory in:
/// present and mapped by this process alone (/proc/self/pagemap, bits 63 and 56). On most
/// kernels a page only ever read maps the kernel's shared zero page, present but not exclusive,
/// and counts no more in the resident set than a page never touched (mincore() would call it
/// resident); a kernel that maps a private page at the first read counts it (docs/http2.md).
std::size_t resident(const void* at, std::size_t size) {
  const auto first = reinterpret_cast<std::uintptr_t>(at) / kPage;
  const auto last = (reinterpret_cast<std::uintptr_t>(at) + size + kPage - 1) / kPage;
  std::vector<std::uint64_t> entries(last - first);
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  const auto bytes = static_cast<std::ptrdiff_t>(entries.size() * sizeof(std::uint64_t));
  const bool read_all = ::pread(fd, entries.data(), static_cast<std::size_t>(bytes),
                                static_cast<off_t>(first * sizeof(std::uint64_t))) == bytes;
  ::close(fd);
  if (!read_all) {
    return 0;
  }
  constexpr std::uint64_t kPresent = std::uint64_t{1} << 63U;
  constexpr std::uint64_t kExclusive = std::uint64_t{1} << 56U;
  return static_cast<std::size_t>(
      std::count_if(entries.begin(), entries.end(),
                    [](std::uint64_t e) { return (e & kPresent) != 0 && (e & kExclusive) != 0; }));
}

}  // namespace

SessionMemory::SessionMemory() {
  mem_.mem_user_data = this;
  mem_.malloc = [](std::size_t size, void* self) {
    bool zero = false;
    return static_cast<SessionMemory*>(self)->allocate(size, zero);
  };
  mem_.free = [](void* ptr, void* self) { static_cast<SessionMemory*>(self)->release(ptr); };
  mem_.calloc = [](std::size_t n, std::size_t size, void* self) -> void* {
    if (size != 0 && n > static_cast<std::size_t>(-1) / size) {
      return nullptr;
    }
    bool zero = false;
    void* p = static_cast<SessionMemory*>(self)->allocate(n * size, zero);
    if (p != nullptr && !zero) {
      std::memset(p, 0, n * size);  // (a paged block on fresh pages is zero already)
    }
    return p;
  };
  mem_.realloc = [](void* ptr, std::size_t size, void* self) {
    return static_cast<SessionMemory*>(self)->resize(ptr, size);
  };
}

SessionMemory::~SessionMemory() {
  for (Paged& paged : paged_) {  // (the session has freed them; this is for one that did not)
    if (paged.block != nullptr) {
      pool_of(paged.pool).give_back(paged.block);
      paged.block = nullptr;
    }
  }
}

std::size_t SessionMemory::paged() const noexcept {
  return static_cast<std::size_t>(std::count_if(paged_.begin(), paged_.end(),
                                                [](const Paged& p) { return p.block != nullptr; }));
}

std::size_t SessionMemory::paged(Pool pool) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(paged_.begin(), paged_.end(),
                    [pool](const Paged& p) { return p.block != nullptr && p.pool == pool; }));
}

void SessionMemory::session_made() noexcept {
  making_ = false;
  const auto held = std::find_if(paged_.begin(), paged_.end(), [](const Paged& p) {
    return p.block != nullptr && p.pool == Pool::kFrame;
  });
  frame_buffer_ = held == paged_.end() ? nullptr : held->block;
}

void SessionMemory::release_frame_buffer_pages() noexcept {
  if (frame_buffer_ != nullptr) {
    ::madvise(frame_buffer_, kPagedMax, MADV_DONTNEED);
  }
}

std::size_t SessionMemory::frame_buffer_resident_pages() const {
  return frame_buffer_ == nullptr ? 0 : resident(frame_buffer_, kPagedMax);
}

std::size_t SessionMemory::resident_pages() const {
  std::size_t pages = 0;
  for (const Paged& paged : paged_) {
    if (paged.block != nullptr) {
      pages += resident(paged.block, pool_of(paged.pool).slot_bytes());
    }
  }
  return pages;
}

std::size_t SessionMemory::pool_slots(Pool pool) {
  return pool_of(pool).slots();
}

std::size_t SessionMemory::pool_free_slots(Pool pool) {
  return pool_of(pool).free_slots();
}

std::size_t SessionMemory::find(const void* ptr) const noexcept {
  if (ptr == nullptr) {
    return kMaxPaged;
  }
  const auto it =
      std::find_if(paged_.begin(), paged_.end(), [ptr](const Paged& p) { return p.block == ptr; });
  return static_cast<std::size_t>(it - paged_.begin());
}

void* SessionMemory::allocate(std::size_t size, bool& zero) {
  if (const std::optional<Pool> pool = pool_for(size, making_)) {
    const auto entry = std::find_if(paged_.begin(), paged_.end(),
                                    [](const Paged& p) { return p.block == nullptr; });
    if (entry != paged_.end()) {
      if (const auto taken = pool_of(*pool).take(); taken.slot != nullptr) {
        *entry = {taken.slot, *pool};
        zero = taken.zero;
        return taken.slot;
      }
    }
  }
  zero = false;
  // NOLINTNEXTLINE(cppcoreguidelines-no-malloc): nghttp2 frees with free()
  return std::malloc(size == 0 ? 1 : size);
}

void SessionMemory::release(void* ptr) {
  const std::size_t i = find(ptr);
  if (i < kMaxPaged) {
    const Pool pool = paged_[i].pool;
    paged_[i].block = nullptr;
    if (ptr == frame_buffer_) {
      frame_buffer_ = nullptr;
    }
    pool_of(pool).give_back(ptr);
    return;
  }
  std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc)
}

void* SessionMemory::resize(void* ptr, std::size_t size) {
  const std::size_t i = find(ptr);
  if (i == kMaxPaged) {
    if (ptr == nullptr) {
      bool zero = false;
      return allocate(size, zero);
    }
    return std::realloc(ptr, size);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  const std::size_t room = pool_of(paged_[i].pool).slot_bytes();
  if (size <= room && size > 0) {
    return ptr;  // the slot has the room
  }
  void* moved = size == 0 ? nullptr : std::malloc(size);  // NOLINT(cppcoreguidelines-no-malloc)
  if (size != 0 && moved == nullptr) {
    return nullptr;  // (realloc's contract: the old block stays)
  }
  if (moved != nullptr) {
    std::memcpy(moved, ptr, std::min(size, room));
  }
  release(ptr);
  return moved;
}

}  // namespace sluice::http2
