// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <span>
#include <string_view>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/errors.hpp"
#include "gateway/proxy/net.hpp"

namespace sluice::proxy {

/// A header field the gateway adds to a response (e.g. the rate-limit fields).
struct ExtraField {
  std::string_view name;
  std::string_view value;
};

/// What a gateway-made reply needs besides the error.
struct ReplyOptions {
  unsigned version = 11;
  bool keep_alive = false;
  std::string_view request_id;
  std::string_view allow;              ///< 405: the `Allow` field
  unsigned retry_after_s = 0;          ///< 429/503: `Retry-After` when > 0
  bool head_request = false;           ///< HEAD: the head only
  std::span<const ExtraField> fields;  ///< added to the reply
  std::string_view body;               ///< replaces the default {"error": reason} body
};

/// What reply_error sent.
struct Replied {
  unsigned status = 0;           ///< the status sent, 0 when the write failed
  std::uint64_t body_bytes = 0;  ///< body bytes sent (0 for HEAD or a failed write)
};

/// Writes `{"error": reason}` (or options.body) with the error's status to the client.
net::awaitable<Replied> reply_error(beast::tcp_stream& down, GatewayError error,
                                    const ReplyOptions& options, core::Duration timeout);

}  // namespace sluice::proxy
