// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The data-path listeners of the configuration (docs/behaviour.md "Configuration",
// `listeners`), parsed by listener_sections.cpp. Plain value types, like the rest of Config
// (config.hpp): immutable once published, so any number of threads may read them.
namespace sluice::config {

/// One certificate of a TLS listener (docs/tls.md).
struct TlsCertificateConfig {
  std::string cert;                       // PEM file: the certificate, then its chain
  std::string key;                        // PEM file: its private key
  std::vector<std::string> server_names;  // empty: the DNS names of the certificate's SAN
  std::optional<std::string> ocsp;        // a DER OCSP response file to staple, or "fetch" (AIA)

  bool operator==(const TlsCertificateConfig&) const = default;
};

/// TLS 1.2 suites by default: ECDHE with an AEAD only (forward secrecy, no CBC).
inline constexpr std::string_view kDefaultCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
/// TLS 1.3 suites by default: all three general-purpose ones.
inline constexpr std::string_view kDefaultCiphersuites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
/// Key exchange groups by default, by preference.
inline constexpr std::string_view kDefaultGroups = "X25519:P-256:P-384";

/// The `tls` object of a listener (docs/tls.md).
struct ListenerTlsConfig {
  std::vector<TlsCertificateConfig> certificates;  // at least one; the first is the default
  std::string min_version = "1.2";                 // "1.2" or "1.3"
  std::vector<std::string> alpn{"http/1.1"};       // by preference: "h2", "http/1.1"
  // The operator's profile (docs/tls.md): OpenSSL list syntax; the defaults are Mozilla's
  // "intermediate" profile without its finite-field DHE suites.
  std::string ciphers = std::string(kDefaultCiphers);            // TLS 1.2
  std::string ciphersuites = std::string(kDefaultCiphersuites);  // TLS 1.3
  std::string groups = std::string(kDefaultGroups);              // key exchange, by preference
  std::optional<std::string> client_ca;  // PEM file: verifies client certificates when set
  bool require_client_cert = false;      // needs client_ca: no valid certificate, no handshake

  bool operator==(const ListenerTlsConfig&) const = default;
};

/// The `http2` object of a listener (docs/http2.md).
struct ListenerHttp2Config {
  bool enabled = false;  // plain: h2c with prior knowledge; TLS: h2 offered by ALPN
  std::uint32_t max_concurrent_streams = 128;  // SETTINGS_MAX_CONCURRENT_STREAMS
  std::uint32_t max_stream_resets = 200;       // client RST_STREAMs per connection per 10 s (burst)

  bool operator==(const ListenerHttp2Config&) const = default;
};

/// One data-path listener (docs/behaviour.md "Configuration", `listeners`). The v1 `listen`
/// object is one listener named "default".
struct ListenerConfig {
  std::string name = "default";          // unique; in logs and metrics
  std::string address = "0.0.0.0";       // an IPv4 or IPv6 literal
  std::uint16_t port = 8080;             // 0 = ephemeral (tests)
  std::optional<ListenerTlsConfig> tls;  // set: the listener speaks HTTPS
  bool redirect_to_https = false;        // plain only: every request 308 to the first TLS one
  bool proxy_protocol = false;  // connections start with a PROXY header (docs/proxy-protocol.md)
  ListenerHttp2Config http2;    // HTTP/2 downstream (docs/http2.md)

  bool operator==(const ListenerConfig&) const = default;
};

}  // namespace sluice::config
