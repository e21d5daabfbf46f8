// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tests/bench/ws_load_options.hpp"

// The connection side of sluice_ws_load (tests/bench/ws_load.cpp): one WebSocket client
// connection, the per-thread worker that owns it, and the steps both modes share.
namespace sluice::bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

/// Bounds a connect, each handshake (opening and closing) and the silence between a message
/// and its echo: a stalled peer becomes an error, not a hang.
inline constexpr std::chrono::seconds kStepTimeout{10};

/// What one thread counted. Confined to its worker's thread until that thread is joined.
struct Tally {
  std::uint64_t messages = 0;        // load: echoes inside the measured window; idle: held
  std::uint64_t messages_total = 0;  // load: every echo, the warm-up's included
  std::uint64_t errors = 0;
  std::vector<std::uint32_t> latencies_us;  // load: one per counted message
};

/// Counts an error and prints the first few on stderr. Thread-safe.
void note_error(Tally& tally, std::string_view what, const beast::error_code& ec);

/// One WebSocket connection and its message. Confined to its worker's thread; owned by the
/// worker, whose io_context outlives it.
struct Conn {
  explicit Conn(net::io_context& ioc) : ws(ioc), release_wait(ioc) {}
  websocket::stream<beast::tcp_stream> ws;
  beast::flat_buffer buffer;
  std::string payload;  // the message in flight
  // Idle mode: the read kept pending while the connection is held. Its handler sets these
  // and cancels release_wait.
  net::steady_timer release_wait;
  bool read_done = false;
  beast::error_code read_error;
};

/// One thread's io_context and the connections that live on it. The io_context is declared
/// first, so the connections are destroyed before it. Confined to its thread while it runs.
struct Worker {
  net::io_context ioc{1};
  std::vector<std::unique_ptr<Conn>> conns;
  Tally tally;
  net::steady_timer release{ioc, Clock::time_point::max()};  // idle mode: the hold's end
  bool released = false;                                     // idle mode: release has run
  std::uint64_t alive_after_hold = 0;                        // idle mode
};

/// Connects and upgrades (Host and target from `options`), with a kStepTimeout for each step
/// and an idle timeout of kStepTimeout. Errors go to `tally`; false on failure.
net::awaitable<bool> open_conn(Conn& conn, const tcp::resolver::results_type& endpoints,
                               const WsLoadOptions& options, Tally& tally);

/// Writes conn.payload and reads its echo, checking type, length and end bytes, and every
/// byte when `full`. Errors (I/O or a wrong echo) go to `tally`; false on any.
net::awaitable<bool> exchange(Conn& conn, bool full, Tally& tally);

/// Closes with code 1000 and waits for the peer's close frame; errors go to `tally`.
net::awaitable<void> close_conn(Conn& conn, Tally& tally);

}  // namespace sluice::bench
