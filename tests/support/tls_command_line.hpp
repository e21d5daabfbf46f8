// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"

// The real command-line TLS clients the TLS tests run against the binary.
namespace sluice::testing {

/// `openssl s_client` against 127.0.0.1:PORT with `args`, sending `input` (printf-escaped);
/// its output (stdout and stderr).
ProcessResult s_client(std::uint16_t port, const std::vector<std::string>& args,
                       const std::string& input = "");

/// curl over HTTPS to `host` (resolved to 127.0.0.1:PORT, verified against `ca`): the body,
/// then a line "STATUS HTTP_VERSION", or the curl error in `err`.
ProcessResult curl_https(std::uint16_t port, const std::string& host, const std::string& ca,
                         const std::string& path, const std::vector<std::string>& extra = {});

}  // namespace sluice::testing
