// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/tls/ticket_keys.hpp"

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
/// compression, ALPN from the listener's `alpn` (`h2`, `http/1.1`; docs/http2.md), the certificate
/// chosen by SNI (an exact name, then a one-label wildcard, else the first certificate),
/// resumption by session tickets under the process's TicketKeys (no server-side session
/// cache), and client certificates verified against `client_ca` when it is set.
/// Immutable once loaded; shared by every worker (OpenSSL contexts are thread-safe for
/// creating connections), replaced as a whole when certificates are reloaded.
class ServerTls {
 public:
  /// Loads every certificate of `config` and its client_ca; `path` is the config path of the
  /// `tls` object, for errors (`listeners[1].tls.certificates[0].key: ...`), and names the
  /// sessions (a ticket resumes only on the listener that issued it). Returns null and sets
  /// `error` when a file is unreadable, a key does not match its certificate, or a certificate
  /// has expired. The result keeps `keys` alive.
  [[nodiscard]] static std::shared_ptr<const ServerTls> load(
      const config::ListenerTlsConfig& config, const std::string& path,
      std::shared_ptr<const TicketKeys> keys, std::string& error);

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
  /// The policy of `config` on a new context: versions, options, tickets, client_ca, ALPN.
  bool configure(SSL_CTX* ctx, const config::ListenerTlsConfig& config, const std::string& path,
                 std::string& error) const;

  std::shared_ptr<const TicketKeys> keys_;
  std::vector<ServedCertificate> certificates_;
  std::vector<unsigned char> alpn_;  ///< what we accept, in wire format
};

/// Where a TLS listener's ServerTls lives: every accept reads it, a reload replaces it whole.
/// Connections keep the ServerTls they started with, so a reload never touches them.
/// Thread-safe (a mutex around one shared_ptr copy; never held across anything else).
class CertificateSlot {
 public:
  explicit CertificateSlot(std::shared_ptr<const ServerTls> initial)
      : current_(std::move(initial)) {}
  [[nodiscard]] std::shared_ptr<const ServerTls> load() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void store(std::shared_ptr<const ServerTls> next) {
    std::lock_guard lock(mutex_);
    current_ = std::move(next);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const ServerTls> current_;
};

/// True when `pattern` (lower case; may start with "*.") matches `name` (lower case).
[[nodiscard]] bool name_matches(std::string_view pattern, std::string_view name) noexcept;

}  // namespace sluice::tls
