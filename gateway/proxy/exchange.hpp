// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gateway/config/config.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/proxy/net.hpp"
#include "gateway/proxy/relay.hpp"
#include "gateway/proxy/reply.hpp"
#include "gateway/proxy/snapshot.hpp"

namespace sluice::proxy {

class Worker;

/// One routed request, ready to go upstream (its head already prepared by the forwarder).
struct ExchangeRequest {
  const Backend* backend = nullptr;
  const config::HttpConfig* http = nullptr;
  std::string_view request_id;
  bool head_request = false;
  bool idempotent = false;         ///< GET, HEAD, PUT, DELETE, OPTIONS, TRACE
  bool keep_alive_wanted = false;  ///< the client wants keep-alive and we are not draining
  unsigned client_version = 11;
  bool send_continue = false;  ///< answer `Expect: 100-continue` once the upstream is ready
  std::span<const ExtraField> response_fields;  ///< added to the response (rate-limit fields)
};

/// What the upstream did with the request: the breaker's and the upstream metrics' input.
enum class UpstreamResult {
  kNotSent,       ///< never reached the upstream for a reason of the client's (or was not tried)
  kResponse,      ///< a response head arrived (`upstream_status`), and its body did not fail
  kConnectError,  ///< no connection could be made
  kTimeout,       ///< no response head (or no body progress) within timeout_ms
  kReset,         ///< the upstream closed or reset before the response was complete
};

/// What happened, for the access log and the session loop.
struct ExchangeOutcome {
  unsigned status = 0;  ///< sent to the client; 0 when the response was cut or never sent
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::optional<core::Duration> upstream_time;  ///< request sent -> response head received
  const UpstreamEndpoint* endpoint = nullptr;
  bool reusable = false;  ///< the client connection may carry another request
  UpstreamResult upstream = UpstreamResult::kNotSent;
  unsigned upstream_status = 0;  ///< the upstream's status when a response head arrived
};

/// Forwards one request to `request.backend` and relays the response (SPEC §4):
/// - a pooled connection, or a new one within `connect_timeout_ms`; when connecting fails, one
///   other endpoint is tried (nothing was sent), then 502 `upstream_connect_error`;
/// - the body streams in both directions; when the client's body is not already buffered, both
///   directions run concurrently, so an upstream that answers early (or echoes while reading)
///   never deadlocks the exchange;
/// - no response head within `timeout_ms` of the request being sent -> 504; a reset or close
///   before the head -> 502 `upstream_reset`; one failing mid-body cuts the client connection;
/// - a reused connection that turns out closed is retried once on a fresh connection when the
///   request has no body and is idempotent, or when nothing could be sent.
/// Runs on the worker's thread; never throws.
net::awaitable<ExchangeOutcome> exchange(Worker& worker, const ExchangeRequest& request,
                                         beast::tcp_stream& down, beast::flat_buffer& down_buffer,
                                         RequestParser& parser);

}  // namespace sluice::proxy
