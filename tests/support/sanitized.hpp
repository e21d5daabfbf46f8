// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace sluice::testing {

/// True in the ASan and TSan builds (the binaries under test are built the same way): their
/// allocators keep freed memory and add redzones or shadow memory, so RSS figures mean little
/// there and tests that measure memory loosen or skip their bounds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace sluice::testing
