// SPDX-License-Identifier: Apache-2.0
#pragma once

// Internal to the admin API's source files: one request as its handlers see it.

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <vector>

#include "gateway/admin/admin_api.hpp"

namespace sluice::admin {

struct AdminApi::Call {
  const Request& req;
  const boost::asio::ip::tcp::endpoint& peer;
  std::vector<std::string> segments;  ///< the path after /admin, decoded
  bool dry_run = false;               ///< `?dry_run=true`: validate and answer, change nothing
};

/// A peer address for the audit log: "1.2.3.4:5" or "[::1]:5".
[[nodiscard]] std::string show(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sluice::admin
