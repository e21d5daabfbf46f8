// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

  bool operator==(const TlsCertificateConfig&) const = default;
};

/// The `tls` object of a listener (docs/tls.md).
struct ListenerTlsConfig {
  std::vector<TlsCertificateConfig> certificates;  // at least one; the first is the default
  std::string min_version = "1.2";                 // "1.2" or "1.3"
  std::vector<std::string> alpn{"http/1.1"};       // by preference: "h2", "http/1.1"
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
