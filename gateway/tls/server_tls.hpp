// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"

// What a TLS listener serves (docs/tls.md): its certificates, each in an OpenSSL context set up
// with the listener's policy, chosen per handshake by the client's SNI.
namespace sluice::tls {

/// One certificate of a listener, loaded.
struct ServedCertificate {
  std::unique_ptr<boost::asio::ssl::context> context;  ///< the certificate, its chain, its key
  std::vector<std::string> names;  ///< lower case; "*.example.com" matches one label
  std::chrono::system_clock::time_point not_after;
  std::string subject;  ///< for logs
};

/// A TLS listener's certificates and policy: TLS 1.2 or 1.3 at least, no renegotiation, no
/// compression, ALPN `http/1.1` (h2 is not offered before HTTP/2 exists), and the certificate
/// chosen by SNI: an exact name, then a one-label wildcard, else the first certificate.
/// Immutable once loaded; shared by every worker (OpenSSL contexts are thread-safe for
/// creating connections), replaced as a whole when certificates are reloaded.
class ServerTls {
 public:
  /// Loads every certificate of `config`; `path` is the config path of the `tls` object, for
  /// errors (`listeners[1].tls.certificates[0].key: ...`). Returns null and sets `error` when a
  /// file is unreadable, a key does not match its certificate, or a certificate has expired.
  [[nodiscard]] static std::shared_ptr<const ServerTls> load(
      const config::ListenerTlsConfig& config, const std::string& path, std::string& error);

  ServerTls(const ServerTls&) = delete;
  ServerTls& operator=(const ServerTls&) = delete;
  ~ServerTls();

  /// The context a connection starts with (the default certificate's); the SNI callback
  /// switches to the chosen one.
  [[nodiscard]] boost::asio::ssl::context& initial_context() const {
    return *certificates_.front().context;
  }
  /// The certificate for `server_name` (empty: none sent): exact, then wildcard, else the first.
  [[nodiscard]] const ServedCertificate& select(std::string_view server_name) const;
  [[nodiscard]] const std::vector<ServedCertificate>& certificates() const noexcept {
    return certificates_;
  }

 private:
  ServerTls() = default;
  std::vector<ServedCertificate> certificates_;
  std::vector<unsigned char> alpn_;  ///< what we accept, in wire format
};

/// True when `pattern` (lower case; may start with "*.") matches `name` (lower case).
[[nodiscard]] bool name_matches(std::string_view pattern, std::string_view name) noexcept;

}  // namespace sluice::tls
