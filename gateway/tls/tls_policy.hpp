// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/ssl.h>

#include <string>

#include "gateway/config/listener_config.hpp"

// The operator's TLS profile of a listener (docs/tls.md, "Operator's profile"): its TLS 1.2
// ciphers, TLS 1.3 suites and key exchange groups, judged name by name and applied to an
// OpenSSL context. Stateless functions; thread-safe.
namespace sluice::tls {

/// Applies `config.ciphers`, `ciphersuites` and `groups` to `ctx`. Every name of each list must
/// be one OpenSSL knows (OpenSSL itself skips unknown ones as long as one is left): otherwise
/// false, with `error` naming the field under `path` and the name
/// (`listeners[1].tls.groups: OpenSSL knows no group "P-999"`).
[[nodiscard]] bool apply_policy(SSL_CTX* ctx, const config::ListenerTlsConfig& config,
                                const std::string& path, std::string& error);

}  // namespace sluice::tls
