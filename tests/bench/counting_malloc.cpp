// SPDX-License-Identifier: Apache-2.0
// Interposes glibc's allocator in the binary it is linked into, counting every allocation and
// forwarding to glibc's own entry points (__libc_malloc and friends). Counting at this level,
// not at operator new, also sees what bypasses operator new (Asio's aligned_alloc, C
// libraries). In a translation unit of its own.
#include "tests/bench/counting_malloc.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t size);                       // NOLINT(bugprone-reserved-identifier)
void* __libc_calloc(std::size_t n, std::size_t size);        // NOLINT(bugprone-reserved-identifier)
void* __libc_realloc(void* p, std::size_t size);             // NOLINT(bugprone-reserved-identifier)
void* __libc_memalign(std::size_t align, std::size_t size);  // NOLINT(bugprone-reserved-identifier)
void __libc_free(void* p);                                   // NOLINT(bugprone-reserved-identifier)
}

namespace {

std::atomic<std::uint64_t> g_allocations{0};

void count() noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::uint64_t sluice::bench::allocation_count() noexcept {
  return g_allocations.load(std::memory_order_relaxed);
}

extern "C" {

void* malloc(std::size_t size) {  // NOLINT(cert-dcl37-c, cert-dcl51-cpp)
  count();
  return __libc_malloc(size);
}

void* calloc(std::size_t n, std::size_t size) {  // NOLINT(cert-dcl37-c, cert-dcl51-cpp)
  count();
  return __libc_calloc(n, size);
}

void* realloc(void* p, std::size_t size) {  // NOLINT(cert-dcl37-c, cert-dcl51-cpp)
  count();
  return __libc_realloc(p, size);
}

void* aligned_alloc(std::size_t align, std::size_t size) {  // NOLINT(cert-dcl37-c)
  count();
  return __libc_memalign(align, size);
}

void* memalign(std::size_t align, std::size_t size) {  // NOLINT(cert-dcl37-c)
  count();
  return __libc_memalign(align, size);
}

int posix_memalign(void** out, std::size_t align, std::size_t size) {  // NOLINT(cert-dcl37-c)
  count();
  void* p = __libc_memalign(align, size);
  if (p == nullptr) {
    return ENOMEM;
  }
  *out = p;
  return 0;
}

void free(void* p) {  // NOLINT(cert-dcl37-c, cert-dcl51-cpp)
  __libc_free(p);
}

}  // extern "C"
