// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <optional>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/io_deadline.hpp"
#include "gateway/proxy/net.hpp"

namespace sluice::proxy {

using RequestParser = http::request_parser<http::buffer_body>;
using ResponseParser = http::response_parser<http::buffer_body>;

/// Shared between the two directions of one exchange, so each can tell the other it is done.
/// Confined to the session's thread.
struct DuplexState {
  bool request_done = false;                 ///< the pump has finished (successfully or not)
  bool response_done = false;                ///< the response relay has finished
  bool cancel_upstream_on_failure = false;   ///< duplex mode: a failed pump cancels `up`
  bool cancel_downstream_when_done = false;  ///< duplex mode: a finished relay cancels `down`
  /// Duplex mode: armed by the pump on `up` once the request is fully sent; when it expires
  /// before the response head arrived, the head read fails (SPEC: timeout_ms is the time to the
  /// response head). Owned by the exchange, which checks head_deadline->expired().
  IoDeadline* head_deadline = nullptr;
  core::Duration head_timeout{};
  bool head_received = false;
};

struct PumpResult {
  std::uint64_t body_bytes = 0;
  beast::error_code down_error;  ///< reading the client (incl. http::error::body_limit)
  beast::error_code up_error;    ///< writing the upstream
  bool complete = false;         ///< head and whole body written upstream
};

/// Writes the request head upstream, then streams the body from the client as it arrives
/// (buffer_body through `buf` of `size` bytes: memory stays flat). `down_timeout` bounds each
/// read from the client, `up_timeout` each write. Never throws.
net::awaitable<PumpResult> pump_request(beast::tcp_stream& down, beast::flat_buffer& down_buffer,
                                        RequestParser& parser, beast::tcp_stream& up, char* buf,
                                        std::size_t size, core::Duration down_timeout,
                                        core::Duration up_timeout, DuplexState& duplex);

/// The fast path for a bodyless request: its head, as Beast serializes it, copied into `buf`
/// and sent in one plain write (Beast's generic serializer costs more than the send itself for
/// small messages). nullopt if the head does not fit in `size`: use pump_request.
net::awaitable<std::optional<PumpResult>> send_small_request(const http::request_header<>& head,
                                                             beast::tcp_stream& up, char* buf,
                                                             std::size_t size,
                                                             core::Duration up_timeout);

struct RelayResult {
  std::uint64_t body_bytes = 0;
  beast::error_code up_error;    ///< reading the upstream (beast::error::timeout on inactivity)
  beast::error_code down_error;  ///< writing the client
  bool head_sent = false;        ///< something reached the client: no error reply possible
  bool complete = false;         ///< the whole response was written
  bool need_eof = false;         ///< the body was delimited by closing the connection
};

/// The fast path for a response (head already parsed and prepared) whose whole body is already
/// in `up_buffer` (Content-Length framing) or that has none: head and body copied into `buf`
/// and sent in one plain write. nullopt, having consumed nothing, if it does not qualify or fit:
/// use relay_response.
net::awaitable<std::optional<RelayResult>> send_small_response(
    ResponseParser& parser, beast::flat_buffer& up_buffer, beast::tcp_stream& down, char* buf,
    std::size_t size, core::Duration down_timeout, bool head_only);

/// Streams the response (head already parsed into `parser.get()`, ready to send) to the client.
/// `head_only`: a response to HEAD (or a 204/304): the head alone, whatever its framing fields.
net::awaitable<RelayResult> relay_response(beast::tcp_stream& up, beast::flat_buffer& up_buffer,
                                           ResponseParser& parser, beast::tcp_stream& down,
                                           char* buf, std::size_t size, core::Duration up_timeout,
                                           core::Duration down_timeout, bool head_only,
                                           DuplexState& duplex);

}  // namespace sluice::proxy
