// SPDX-License-Identifier: Apache-2.0
// A process-wide count of heap allocations (counting_malloc.cpp interposes the C allocator).
#pragma once

#include <cstdint>

namespace sluice::bench {

/// Calls of malloc, calloc, realloc, aligned_alloc, posix_memalign and memalign so far, from
/// every thread: operator new, Asio's recycling allocator (aligned_alloc) and everything else
/// end up in one of them.
[[nodiscard]] std::uint64_t allocation_count() noexcept;

}  // namespace sluice::bench
