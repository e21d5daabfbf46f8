// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/config/config.hpp"

// How sluice speaks TLS to a backend (docs/tls.md "Upstream TLS").
namespace sluice::tls {

/// A backend's client-side TLS: an OpenSSL context with TLS 1.2 at least, the CA file (or the
/// system store) to verify the backend against, and the client certificate to present. Loaded
/// from files when a config version is installed; immutable afterwards, so every worker
/// creates its connections from it concurrently (thread-safe). A reload that re-reads files
/// makes a new one; connections pooled under the old one are not reused.
class ClientTls {
 public:
  /// Loads `config`'s files; `path` is the config path of the `tls` object, for errors
  /// (`backends.users.tls.ca: cannot load ...`). Null and `error` set on failure.
  [[nodiscard]] static std::shared_ptr<const ClientTls> load(const config::BackendTlsConfig& config,
                                                             const std::string& path,
                                                             std::string& error);
  ClientTls(const ClientTls&) = delete;
  ClientTls& operator=(const ClientTls&) = delete;
  ~ClientTls();

  [[nodiscard]] boost::asio::ssl::context& context() const { return *context_; }
  [[nodiscard]] const config::BackendTlsConfig& config() const noexcept { return config_; }

  /// Prepares a new connection's `ssl` for `host` (the endpoint's): SNI and the name verified
  /// are `server_name` when configured, else `host`; an IP literal host is verified as an IP
  /// address and sends no SNI (RFC 6066). Returns false when OpenSSL refuses the name.
  bool prepare(SSL* ssl, std::string_view host) const;

 private:
  ClientTls() = default;
  std::unique_ptr<boost::asio::ssl::context> context_;
  config::BackendTlsConfig config_;
};

/// Why a client handshake failed, in words: the certificate verification's reason when that is
/// what failed ("certificate has expired", "unable to get local issuer certificate"), else the
/// error's message.
[[nodiscard]] std::string handshake_failure(const SSL* ssl, const boost::system::error_code& ec);

}  // namespace sluice::tls
