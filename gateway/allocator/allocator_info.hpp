// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

namespace sluice::allocator {

/// The heap allocator the running binary's malloc and operator new use, as one log line's
/// fields: `name=mimalloc version=2.0.9 active=true` when the binary was linked with mimalloc
/// (docs/decisions/0028-mimalloc.md) and it does serve malloc, `name=glibc` otherwise (the
/// sanitizer builds, and a build with SLUICE_MIMALLOC=OFF). `active` is checked, not assumed:
/// a block from malloc() must lie in mimalloc's heap.
std::string describe();

}  // namespace sluice::allocator
