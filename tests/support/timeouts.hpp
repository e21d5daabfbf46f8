// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>

namespace sluice::testing {

/// How long a test helper waits for anything (a line, an exit, a response) unless told
/// otherwise. Every wait in tests/support is bounded, so a broken test fails instead of hanging.
inline constexpr std::chrono::milliseconds kDefaultTimeout{5000};

}  // namespace sluice::testing
