// SPDX-License-Identifier: Apache-2.0
// Paged blocks for libnghttp2's frame buffers (docs/http2.md, "Memory per connection"): slots
// of kPagedMax bytes carved from large anonymous mappings, a slot's pages given back to the
// kernel (MADV_DONTNEED) when its block is freed, so a new session's untouched pages are not
// resident. The mappings themselves stay for the process's life (address space only, one
// mapping per kSlotsPerChunk slots: a few per thousand connections, far under vm.max_map_count).
#include "gateway/http2/session_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace sluice::http2 {
namespace {

constexpr std::size_t kSlotsPerChunk = 256;  // 5 MiB of address space per mapping

class PagePool {
 public:
  static PagePool& instance() {
    static auto* pool = new PagePool();  // never destroyed: sessions may outlive statics
    return *pool;
  }

  /// A slot of kPagedMax bytes, or null when no mapping can be made.
  void* take() {
    const std::lock_guard lock(mutex_);
    if (free_.empty() && !grow()) {
      return nullptr;
    }
    void* slot = free_.back();
    free_.pop_back();
    return slot;
  }

  /// The slot's pages go back to the kernel; whoever writes it next starts from zero pages.
  static void clear(void* slot) noexcept {
    ::madvise(slot, SessionMemory::kPagedMax, MADV_DONTNEED);
  }

  void give_back(void* slot) {
    clear(slot);
    const std::lock_guard lock(mutex_);
    free_.push_back(slot);
  }

  std::size_t slots() {
    const std::lock_guard lock(mutex_);
    return chunks_ * kSlotsPerChunk;
  }
  std::size_t free_slots() {
    const std::lock_guard lock(mutex_);
    return free_.size();
  }

 private:
  PagePool() = default;

  bool grow() {
    constexpr std::size_t kBytes = kSlotsPerChunk * SessionMemory::kPagedMax;
    void* chunk = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (chunk == MAP_FAILED) {
      return false;
    }
    ++chunks_;
    auto* base = static_cast<std::byte*>(chunk);
    free_.reserve(free_.size() + kSlotsPerChunk);
    for (std::size_t i = kSlotsPerChunk; i > 0; --i) {  // (the first slot is taken first)
      free_.push_back(base + (i - 1) * SessionMemory::kPagedMax);
    }
    return true;
  }

  std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t chunks_ = 0;
};

bool pageable(std::size_t size) {
  return size > SessionMemory::kPagedMin && size <= SessionMemory::kPagedMax;
}

}  // namespace

SessionMemory::SessionMemory() {
  mem_.mem_user_data = this;
  mem_.malloc = [](std::size_t size, void* self) {
    return static_cast<SessionMemory*>(self)->allocate(size);
  };
  mem_.free = [](void* ptr, void* self) { static_cast<SessionMemory*>(self)->release(ptr); };
  mem_.calloc = [](std::size_t n, std::size_t size, void* self) -> void* {
    if (size != 0 && n > static_cast<std::size_t>(-1) / size) {
      return nullptr;
    }
    auto& memory = *static_cast<SessionMemory*>(self);
    void* p = memory.allocate(n * size);
    if (p != nullptr && memory.find(p) == kMaxPaged) {
      std::memset(p, 0, n * size);  // (a paged block is zero already: its pages are fresh)
    }
    return p;
  };
  mem_.realloc = [](void* ptr, std::size_t size, void* self) {
    return static_cast<SessionMemory*>(self)->resize(ptr, size);
  };
}

SessionMemory::~SessionMemory() {
  for (void*& slot : paged_) {  // (the session has freed them; this is for one that did not)
    if (slot != nullptr) {
      PagePool::instance().give_back(slot);
      slot = nullptr;
    }
  }
}

std::size_t SessionMemory::paged() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(paged_.begin(), paged_.end(), [](const void* p) { return p != nullptr; }));
}

void SessionMemory::note_frame_buffer() noexcept {
  const auto held =
      std::find_if(paged_.begin(), paged_.end(), [](void* p) { return p != nullptr; });
  frame_buffer_ = held == paged_.end() ? nullptr : *held;
}

void SessionMemory::release_frame_buffer_pages() noexcept {
  if (frame_buffer_ != nullptr) {
    PagePool::clear(frame_buffer_);
  }
}

std::size_t SessionMemory::frame_buffer_resident_pages() const {
  if (frame_buffer_ == nullptr) {
    return 0;
  }
  constexpr std::size_t kPage = 4096;  // (the slots are whole pages at this size or larger)
  std::array<unsigned char, (kPagedMax + kPage - 1) / kPage> in_core{};
  if (::mincore(frame_buffer_, kPagedMax, in_core.data()) != 0) {
    return 0;
  }
  return static_cast<std::size_t>(
      std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1U) != 0; }));
}

std::size_t SessionMemory::pool_slots() {
  return PagePool::instance().slots();
}

std::size_t SessionMemory::pool_free_slots() {
  return PagePool::instance().free_slots();
}

std::size_t SessionMemory::find(const void* ptr) const noexcept {
  if (ptr == nullptr) {
    return kMaxPaged;
  }
  const auto it = std::find(paged_.begin(), paged_.end(), ptr);
  return static_cast<std::size_t>(it - paged_.begin());
}

void* SessionMemory::allocate(std::size_t size) {
  if (pageable(size)) {
    const auto free_entry = std::find(paged_.begin(), paged_.end(), nullptr);
    if (free_entry != paged_.end()) {
      if (void* slot = PagePool::instance().take()) {
        *free_entry = slot;
        return slot;
      }
    }
  }
  // NOLINTNEXTLINE(cppcoreguidelines-no-malloc): nghttp2 frees with free()
  return std::malloc(size == 0 ? 1 : size);
}

void SessionMemory::release(void* ptr) {
  const std::size_t i = find(ptr);
  if (i < kMaxPaged) {
    paged_[i] = nullptr;
    if (ptr == frame_buffer_) {
      frame_buffer_ = nullptr;
    }
    PagePool::instance().give_back(ptr);
    return;
  }
  std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc)
}

void* SessionMemory::resize(void* ptr, std::size_t size) {
  const std::size_t i = find(ptr);
  if (i == kMaxPaged) {
    if (ptr == nullptr) {
      return allocate(size);
    }
    return std::realloc(ptr, size);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  if (size <= kPagedMax && size > 0) {
    return ptr;  // the slot has the room
  }
  void* moved = size == 0 ? nullptr : std::malloc(size);  // NOLINT(cppcoreguidelines-no-malloc)
  if (size != 0 && moved == nullptr) {
    return nullptr;  // (realloc's contract: the old block stays)
  }
  if (moved != nullptr) {
    std::memcpy(moved, ptr, std::min(size, kPagedMax));
  }
  release(ptr);
  return moved;
}

}  // namespace sluice::http2
