// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gateway/config/backend_config.hpp"
#include "gateway/tls/client_tls.hpp"

namespace sluice::proxy {

/// One configured endpoint of a backend.
struct UpstreamEndpoint {
  std::string label;  ///< "host:port" as configured: logs and the connection pool key
  std::string host;
  std::uint16_t port = 0;
  /// Set when `host` is an IP literal (no resolution needed).
  std::optional<boost::asio::ip::tcp::endpoint> address;
  /// Set when the backend speaks TLS: how (docs/tls.md "Upstream TLS").
  std::shared_ptr<const tls::ClientTls> tls;
  /// HTTP/1.1, or HTTP/2 with requests as streams over shared connections (docs/grpc.md).
  config::UpstreamProtocol protocol = config::UpstreamProtocol::kHttp1;
  std::uint32_t max_streams_per_connection = 100;  ///< h2/h2c

  [[nodiscard]] bool speaks_h2() const noexcept {
    return protocol != config::UpstreamProtocol::kHttp1;
  }
};

}  // namespace sluice::proxy
