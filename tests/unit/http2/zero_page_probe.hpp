// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace sluice::http2 {

/// Whether this kernel answers a read of an untouched anonymous page with its shared zero page,
/// so that a page only read costs the process no resident memory (docs/http2.md, "Memory per
/// connection"). Most kernels do. Some map a private page at the first read: the 6.18.44-fc
/// guest kernel this was found on (2026-12-02). There, a page of a session's table that nghttp2
/// only reads is resident all the same. Probed once, on one page of a mapping of its own.
inline bool reads_map_the_zero_page() {
  static const bool answer = [] {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* mapping = ::mmap(nullptr, page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping == MAP_FAILED) {
      return true;
    }
    const volatile char* byte = static_cast<const volatile char*>(mapping);
    static_cast<void>(*byte);  // a read fault, nothing written
    std::uint64_t entry = 0;
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    bool zero_page = true;
    if (fd >= 0) {
      const auto at = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(mapping) / page *
                                         sizeof(std::uint64_t));
      if (::pread(fd, &entry, sizeof(entry), at) == static_cast<ssize_t>(sizeof(entry))) {
        // Present and mapped by this process alone: a private page, not the shared zero page.
        constexpr std::uint64_t kPresent = std::uint64_t{1} << 63U;
        constexpr std::uint64_t kExclusive = std::uint64_t{1} << 56U;
        zero_page = (entry & kPresent) == 0 || (entry & kExclusive) == 0;
      }
      ::close(fd);
    }
    ::munmap(mapping, page);
    return zero_page;
  }();
  return answer;
}

}  // namespace sluice::http2
