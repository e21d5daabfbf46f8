// SPDX-License-Identifier: Apache-2.0
// The WebSocket routes of Session: /ws/echo (every message back, same type, until the client
// closes) and /ws/push (N binary pattern messages, then the server closes). The upgrade runs
// on the session's own tcp_stream, through Beast's websocket::stream (a reference to it), and
// the HTTP session ends with the WebSocket.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <vector>

#include "gateway/demo/demo_session.hpp"

namespace sluice::demo {
namespace {

namespace websocket = beast::websocket;

using WsStream = websocket::stream<beast::tcp_stream&>;

constexpr auto kWsAsTuple = net::as_tuple(net::use_awaitable);

/// Settings every demo WebSocket shares. permessage-deflate stays off (the stream's default:
/// no permessage_deflate option is set), so payloads cross as they are. Without
/// auto_fragment a message leaves as one frame. Beast's suggested server timeouts: 30 s for
/// the opening and closing handshakes, and a ping after 150 s of silence, closing at 300 s.
void configure(WsStream& ws, const std::string& port_text) {
  ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws.set_option(websocket::stream_base::decorator(
      [port_text](websocket::response_type& res) { res.set("X-Backend-Port", port_text); }));
  ws.read_message_max(kMaxWsMessage);
  ws.auto_fragment(false);
}

/// Echoes every message with its type until the client closes (Beast answers its pings and
/// its close frame) or an error or timeout ends the connection.
net::awaitable<void> echo_messages(WsStream& ws) {
  beast::flat_buffer buffer;  // this connection's; grows to its largest message
  for (;;) {
    auto [ec, n] = co_await ws.async_read(buffer, kWsAsTuple);
    if (ec) {
      co_return;  // websocket::error::closed after a clean close
    }
    ws.binary(ws.got_binary());
    auto [wec, wn] = co_await ws.async_write(buffer.data(), kWsAsTuple);
    if (wec) {
      co_return;
    }
    buffer.consume(buffer.size());
  }
}

/// `size` pattern bytes as a sequence of 64 KiB pattern pieces: each piece is the same bytes
/// (kPieceBytes is a multiple of the alphabet), so nothing is copied per message.
std::vector<net::const_buffer> pattern_message(std::uint64_t size) {
  static const std::vector<char> piece = [] {
    std::vector<char> p(kPieceBytes);
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] = pattern_byte(i);
    }
    return p;
  }();
  std::vector<net::const_buffer> buffers;
  for (std::uint64_t left = size; left > 0;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kPieceBytes));
    buffers.emplace_back(piece.data(), n);
    left -= n;
  }
  return buffers;
}

/// Sends `count` binary messages of `size` pattern bytes, then closes (normal, 1000) and
/// waits for the client's close frame (async_close reads until it arrives).
net::awaitable<void> push_messages(WsStream& ws, std::uint64_t count, std::uint64_t size) {
  const auto message = pattern_message(size);
  ws.binary(true);
  for (std::uint64_t i = 0; i < count; ++i) {
    auto [ec, n] = co_await ws.async_write(message, kWsAsTuple);
    if (ec) {
      co_return;
    }
  }
  co_await ws.async_close(websocket::close_code::normal, kWsAsTuple);
}

}  // namespace

net::awaitable<void> Session::websocket(const RequestParser& parser, const Route& route) {
  const Request& req = parser.get();
  // A client sends nothing after its upgrade request until the 101 arrives (RFC 6455 4.1).
  // Bytes already buffered, or a request body, cannot be handed to websocket::stream, which
  // reads from the socket only: refuse rather than lose them.
  if (buffer_.size() != 0 || !parser.is_done()) {
    Reply reply{400, "application/json", R"({"error":"bad_request"})", true};
    co_await write_reply(req, reply);
    co_return;
  }
  beast::get_lowest_layer(stream_).expires_never();  // the WebSocket keeps its own timeouts
  WsStream ws(stream_);
  configure(ws, context_.port_text);
  // Beast answers a malformed upgrade (no Sec-WebSocket-Key, a wrong version) with a 400.
  if (auto [ec] = co_await ws.async_accept(req, kWsAsTuple); ec) {
    co_return;
  }
  if (route.kind == RouteKind::kWsPush) {
    co_await push_messages(ws, route.number, route.size);
  } else {
    co_await echo_messages(ws);
  }
}

}  // namespace sluice::demo
