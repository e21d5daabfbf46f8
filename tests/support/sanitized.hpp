// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace sluice::testing {

/// True in the ASan and TSan builds (the binaries under test are built the same way): their
/// allocators keep freed memory and add redzones or shadow memory, so RSS figures mean little
/// there and tests that measure memory loosen or skip their bounds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)  // GCC
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)  // clang
inline constexpr bool kSanitized =
    __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace sluice::testing
