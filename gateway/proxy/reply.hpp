// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/errors.hpp"
#include "gateway/proxy/net.hpp"

namespace sluice::proxy {

/// What a gateway-made reply needs besides the error.
struct ReplyOptions {
  unsigned version = 11;
  bool keep_alive = false;
  std::string_view request_id;
  std::string_view allow;      ///< 405: the `Allow` field
  unsigned retry_after_s = 0;  ///< 429/503: `Retry-After` when > 0
  bool head_request = false;   ///< HEAD: the head only
};

/// Writes `{"error": reason}` with the error's status to the client. Returns the status sent,
/// or 0 when the write failed.
net::awaitable<unsigned> reply_error(beast::tcp_stream& down, GatewayError error,
                                     const ReplyOptions& options, core::Duration timeout);

}  // namespace sluice::proxy
