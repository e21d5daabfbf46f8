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
#include "gateway/core/shared_slot.hpp"
#include "gateway/tls/ocsp_staple.hpp"
#include "gateway/tls/ticket_keys.hpp"

// What a TLS listener serves (docs/tls.md): its certificates, each in an OpenSSL context set up
// with the listener's policy, chosen per handshake by the client's SNI.
namespace sluice::tls {

/// One certificate of a listener, loaded. An ECDSA and an RSA certificate for the same names
/// share one context (OpenSSL keeps one certificate per key type in a context and serves each
/// client the one its signature algorithms and suites allow).
struct ServedCertificate {
  std::shared_ptr<boost::asio::ssl::context> context;  ///< its certificate, chain and key
  std::vector<std::string> names;  ///< lower case; "*.example.com" matches one label
  std::chrono::system_clock::time_point not_after;
  std::string subject;     ///< for logs
  std::string key_type;    ///< "ECDSA", "RSA", "Ed25519", ...
  X509* leaf = nullptr;    ///< the certificate in `context` (owned by it)
  X509* issuer = nullptr;  ///< its issuer in the file's chain (owned by `context`); may be null
  std::shared_ptr<OcspStaple> ocsp;  ///< null: not stapled (no `ocsp` in its config)
  bool ocsp_fetch = false;           ///< `"ocsp": "fetch"`: OcspFetcher keeps `ocsp` fresh
  std::string ocsp_problem;  ///< why the `ocsp` file staples nothing now (stale), for the log
};

/// A TLS listener's certificates and policy: TLS 1.2 or 1.3 at least, no renegotiation, no
/// compression, the operator's ciphers, suites and groups in the client's order of preference
/// (tls_policy.hpp), ALPN from the listener's `alpn` (`h2`, `http/1.1`; docs/http2.md; nothing
/// in common is the `no_application_protocol` alert), the certificate
/// chosen by SNI (an exact name, then a one-label wildcard, else the first certificate), an
/// OCSP response stapled for a client that asks when the certificate has a fresh one,
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

  /// The certificate whose leaf is `leaf`; null when none is.
  [[nodiscard]] const ServedCertificate* find(const X509* leaf) const noexcept;

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
  /// The policy of `config` on a new context: versions, options, ciphers, tickets, client_ca,
  /// ALPN, OCSP stapling.
  bool configure(SSL_CTX* ctx, const config::ListenerTlsConfig& config, const std::string& path,
                 std::string& error) const;
  /// Loads certificate `index` of `config` into a new context, or into that of an earlier
  /// certificate with the same names and another key type. False with `error` on a problem.
  bool add_certificate(const config::ListenerTlsConfig& config, std::size_t index,
                       const std::string& path, std::string& error);

  std::shared_ptr<const TicketKeys> keys_;
  std::vector<ServedCertificate> certificates_;
  std::vector<unsigned char> alpn_;  ///< what we accept, in wire format
};

/// Where a TLS listener's ServerTls lives: every accept reads it, a reload replaces it whole.
/// Connections keep the ServerTls they started with, so a reload never touches them.
using CertificateSlot = core::SharedSlot<ServerTls>;

/// True when `pattern` (lower case; may start with "*.") matches `name` (lower case).
[[nodiscard]] bool name_matches(std::string_view pattern, std::string_view name) noexcept;

}  // namespace sluice::tls
