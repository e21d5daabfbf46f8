// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/demo/fault_state.hpp"

// The demo backend's routes (matching and the small fixed replies), kept free of I/O so the
// session code only moves bytes. Thread-safe; pure but for fault_reply, which goes through
// FaultState's atomics.
namespace sluice::demo {

enum class RouteKind {
  kOk,          // /ok
  kEcho,        // /echo: streams the request body back
  kCount,       // /count: {"bytes":N} of the request body
  kStatus,      // /status/{code}
  kSlow,        // /slow/{ms}
  kBytes,       // /bytes/{n}: n pattern bytes
  kHeaders,     // /headers and /headers/...: the request head (target included) as JSON
  kClose,       // /close: reply, then close the connection
  kWsEcho,      // /ws/echo: WebSocket echo (426 without an Upgrade)
  kWsPush,      // /ws/push?n=N&size=S: N binary messages of S bytes, then a close (WebSocket)
  kHealth,      // /healthz: 200 {"status":"up"} or 503 {"status":"down"} (FaultState)
  kControl,     // /control: GET the settings, POST ?health=&capacity=&... to set them
  kNotFound,    // anything else
  kBadRequest,  // a known route with an unusable parameter
};

/// A matched route; `number` is the path parameter of kStatus, kSlow and kBytes, and the
/// message count of kWsPush; `size` is kWsPush's message size in bytes.
struct Route {
  RouteKind kind = RouteKind::kNotFound;
  std::uint64_t number = 0;
  std::uint64_t size = 0;
};

/// Longest `/slow/{ms}` wait accepted (a longer one is a 400).
inline constexpr std::chrono::milliseconds kMaxSlow{600000};
/// Largest WebSocket message read or sent (read_message_max; a larger `size` is a 400).
inline constexpr std::uint64_t kMaxWsMessage = std::uint64_t{64} * 1024 * 1024;
/// Most messages one `/ws/push` sends (more is a 400).
inline constexpr std::uint64_t kMaxWsPush = 1000000;

/// Matches the path of `target` (the query string is ignored).
[[nodiscard]] Route match_route(std::string_view target);

/// A small, fully buffered reply.
struct Reply {
  unsigned status = 200;
  std::string content_type;
  std::string body;
  bool close = false;             // send `Connection: close` and end the connection afterwards
  bool offers_websocket = false;  // send `Upgrade: websocket` (the 426 of the /ws routes)
  std::string allow{};            // the Allow field of a 405 ("" = none)
};

/// The reply of every route except the streaming ones (kEcho with a body, kBytes) and the
/// WebSocket upgrades (kWsEcho and kWsPush without an Upgrade get 426).
/// `body_bytes` is the size of the request body, already consumed.
[[nodiscard]] Reply simple_reply(const Route& route,
                                 const boost::beast::http::request_header<>& req,
                                 std::uint64_t body_bytes);

/// The reply of kHealth and kControl. /healthz: 200 {"status":"up"}, or 503 {"status":"down"}
/// while `faults` is unhealthy, for every method. /control: GET or HEAD without a query, the
/// settings and the service load (settings_json); POST applies its query (parse_control_query) to
/// `faults` and answers 200 with the settings that result, or 400 {"error":"unknown_parameter" or
/// "bad_parameter","parameter":NAME[,"expected":...]} without applying anything; GET or HEAD
/// with a query, 400 {"error":"changes_need_post"}; other methods, 405.
[[nodiscard]] Reply fault_reply(const Route& route, const boost::beast::http::request_header<>& req,
                                FaultState& faults);

/// The Content-Type /echo answers with: the request's, else application/octet-stream.
[[nodiscard]] std::string echo_content_type(const boost::beast::http::request_header<>& req);

/// True for statuses whose responses never carry a body (1xx, 204, 304).
[[nodiscard]] constexpr bool is_bodyless(unsigned status) noexcept {
  return status < 200 || status == 204 || status == 304;
}

}  // namespace sluice::demo
