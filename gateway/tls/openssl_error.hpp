// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

namespace sluice::tls {

/// The reason of the last error in OpenSSL's error queue, in words, and clears the queue (for
/// messages that name a file: "cannot load FILE: REASON").
[[nodiscard]] std::string openssl_reason();

}  // namespace sluice::tls
