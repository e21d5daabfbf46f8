// SPDX-License-Identifier: Apache-2.0
#include "gateway/allocator/allocator_info.hpp"

#include <fmt/format.h>

#include <cstdlib>

#if SLUICE_MIMALLOC
#include <mimalloc.h>
#endif

namespace sluice::allocator {

std::string describe() {
#if SLUICE_MIMALLOC
  const int v = mi_version();  // 209 for 2.0.9
  void* probe = std::malloc(16);
  const bool active = mi_is_in_heap_region(probe);
  std::free(probe);
  return fmt::format("name=mimalloc version={}.{}.{} active={}", v / 100, v / 10 % 10, v % 10,
                     active);
#else
  return "name=glibc";
#endif
}

}  // namespace sluice::allocator
