// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gateway/demo/byte_pattern.hpp"
#include "gateway/demo/demo_routes.hpp"
#include "gateway/demo/fault_state.hpp"
#include "gateway/demo/service_capacity.hpp"

namespace sluice::demo {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

/// Every socket operation of a session must make progress within this long.
inline constexpr std::chrono::seconds kIdleTimeout{60};
/// Largest request header accepted (generous: gateways may forward up to 1 MiB).
inline constexpr std::uint32_t kHeaderLimit = 1024 * 1024;

/// What every session of a server shares: read-only values, and the fault settings (which
/// are thread-safe). Owned by DemoServer, which outlives all sessions (they are destroyed with
/// the io_contexts), as does the FaultState it references.
struct SessionContext {
  std::string port_text;  // value of X-Backend-Port
  FaultState& faults;     // DemoServer's: /healthz, /control, fail_percent, delay_ms, capacity
};

using RequestParser = http::request_parser<http::buffer_body>;
using Request = http::request<http::buffer_body>;

/// One accepted HTTP/1.1 connection: keep-alive, pipelined requests answered in order, bodies
/// streamed through one 64 KiB buffer; an Upgrade to /ws/* turns it into a WebSocket. Confined to
/// the thread of its socket's io_context; lives in the frame of the coroutine that spawn_session
/// starts, and references `context`.
class Session {
 public:
  Session(net::ip::tcp::socket socket, const SessionContext& context);

  /// Serves requests until the peer closes, an error or timeout, or a reply that closes.
  net::awaitable<void> run();

 private:
  net::awaitable<bool> handle(RequestParser& parser);
  net::awaitable<bool> send_continue_if_expected(const RequestParser& parser);
  /// Sends `reply` (its body is moved out). By reference, like every non-trivial argument of a
  /// co_awaited call here: GCC 12 can destroy such temporaries twice (a double free under ASan).
  net::awaitable<bool> write_reply(const Request& req, Reply& reply);
  /// Waits `delay` on a timer (the thread serves other connections meanwhile).
  net::awaitable<void> pause(std::chrono::milliseconds delay);
  /// Claims one of the server's service slots (FaultState::capacity) into `slot` and waits in
  /// the queue until it holds it (true). Meanwhile it watches the connection: a client that
  /// closes it gives up its place at once (false, `slot` empty). Once more bytes have arrived
  /// (the body, a pipelined request) it stops watching and just waits.
  net::awaitable<bool> take_slot(std::optional<SlotClaim>& slot);
  /// Answers an injected failure once the request body has been read: a 503, or a reset.
  net::awaitable<bool> fail(RequestParser& parser, FailStatus status);
  /// Closes the connection with an RST (SO_LINGER 0) instead of a FIN.
  void reset();

  // Streaming routes (demo_streaming.cpp); each returns whether to keep the connection.
  net::awaitable<bool> echo(RequestParser& parser);
  net::awaitable<bool> send_bytes(const Request& req, std::uint64_t count);
  /// Reads and discards the rest of the body; its size, or nullopt on an I/O error.
  net::awaitable<std::optional<std::uint64_t>> drain_body(RequestParser& parser);

  // WebSocket routes (demo_websocket.cpp): accepts the upgrade request of `parser` on this
  // connection and serves /ws/echo or /ws/push until the WebSocket closes. The HTTP session
  // ends with it.
  net::awaitable<void> websocket(const RequestParser& parser, const Route& route);

  char* scratch();  // the 64 KiB body buffer, allocated on first use

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;  // outlives single reads: may hold pipelined bytes
  std::unique_ptr<std::array<char, kPieceBytes>> scratch_;
  const SessionContext& context_;
};

/// Runs a Session for `socket` on the socket's executor. Stray exceptions are reported on
/// stderr and end only that connection.
void spawn_session(net::ip::tcp::socket socket, const SessionContext& context);

}  // namespace sluice::demo
