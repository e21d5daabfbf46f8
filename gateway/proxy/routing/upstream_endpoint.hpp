// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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
};

}  // namespace sluice::proxy
