// SPDX-License-Identifier: Apache-2.0
#include "tests/bench/ws_load_conn.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <mutex>

namespace sluice::bench {
namespace {

constexpr auto kAsTuple = net::as_tuple(net::use_awaitable);
/// I/O errors printed on stderr (all are counted).
constexpr int kErrorsPrinted = 10;
/// A client masks its payload through a buffer of this size at most: one socket write per
/// buffer-full (Beast's default, 4 KiB, would mean 256 writes per MiB).
constexpr std::size_t kMaxWriteBuffer = std::size_t{256} * 1024;

std::atomic<int> errors_printed{0};

}  // namespace

void note_error(Tally& tally, std::string_view what, const beast::error_code& ec) {
  ++tally.errors;
  if (errors_printed.fetch_add(1) < kErrorsPrinted) {
    static std::mutex mutex;
    const std::scoped_lock lock(mutex);
    std::cerr << "sluice_ws_load: " << what << ": " << ec.message() << '\n';
  }
}

net::awaitable<bool> open_conn(Conn& conn, const tcp::resolver::results_type& endpoints,
                               const WsLoadOptions& options, Tally& tally) {
  auto& lowest = beast::get_lowest_layer(conn.ws);
  lowest.expires_after(kStepTimeout);
  if (auto [ec, ep] = co_await lowest.async_connect(endpoints, kAsTuple); ec) {
    note_error(tally, "connect", ec);
    co_return false;
  }
  lowest.expires_never();  // the WebSocket keeps its own timeouts (below)
  beast::error_code ignored;
  lowest.socket().set_option(tcp::no_delay(true), ignored);
  conn.ws.set_option(websocket::stream_base::timeout{kStepTimeout, kStepTimeout, false});
  conn.ws.read_message_max(std::max<std::size_t>(options.size, 1024) + 1);
  conn.ws.write_buffer_bytes(std::clamp<std::size_t>(options.size, 4096, kMaxWriteBuffer));
  conn.ws.auto_fragment(false);  // permessage-deflate stays off: the default
  conn.ws.binary(options.binary);
  const std::string host = options.host.find(':') == std::string::npos
                               ? options.host + ":" + options.port
                               : "[" + options.host + "]:" + options.port;
  if (auto [ec] = co_await conn.ws.async_handshake(host, options.target, kAsTuple); ec) {
    note_error(tally, "handshake", ec);
    co_return false;
  }
  co_return true;
}

net::awaitable<bool> exchange(Conn& conn, bool full, Tally& tally) {
  if (auto [ec, n] = co_await conn.ws.async_write(net::buffer(conn.payload), kAsTuple); ec) {
    note_error(tally, "write", ec);
    co_return false;
  }
  conn.buffer.consume(conn.buffer.size());
  if (auto [ec, n] = co_await conn.ws.async_read(conn.buffer, kAsTuple); ec) {
    note_error(tally, "read", ec);
    co_return false;
  }
  const auto* got = static_cast<const char*>(conn.buffer.data().data());
  const std::string& sent = conn.payload;
  const bool same =
      conn.buffer.size() == sent.size() && conn.ws.got_binary() == conn.ws.binary() &&
      (sent.empty() || (got[0] == sent.front() && got[sent.size() - 1] == sent.back())) &&
      (!full || std::memcmp(got, sent.data(), sent.size()) == 0);
  if (!same) {
    note_error(tally, "echo differs from the message",
               beast::error_code(EBADMSG, boost::system::generic_category()));
  }
  co_return same;
}

net::awaitable<void> close_conn(Conn& conn, Tally& tally) {
  if (auto [ec] = co_await conn.ws.async_close(websocket::close_code::normal, kAsTuple); ec) {
    note_error(tally, "close", ec);
  }
}

}  // namespace sluice::bench
