// SPDX-License-Identifier: Apache-2.0
#include "tests/support/ws_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/error.hpp>
#include <stdexcept>
#include <utility>

namespace sluice::testing {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;

/// Messages a test may exchange: the demo backend's limit (64 MiB) plus one byte, so a test
/// can send one over it.
constexpr std::size_t kWsClientMaxMessage = std::size_t{64} * 1024 * 1024 + 1;
/// A client masks what it sends through a buffer this big: Beast's default, 4 KiB, would
/// mean a write per 4 KiB of a large message.
constexpr std::size_t kWsClientWriteBuffer = std::size_t{64} * 1024;

/// Starts one asynchronous operation through `initiate(handler)` and runs the io_context for
/// at most `timeout`. On expiry the socket is closed (which completes the operation with an
/// error) and beast::error::timeout is returned.
template <typename Initiate>
beast::error_code run_ws_io(net::io_context& ioc, beast::tcp_stream& lowest,
                            std::chrono::milliseconds timeout, Initiate&& initiate) {
  bool done = false;
  beast::error_code result;
  std::forward<Initiate>(initiate)([&](beast::error_code ec, auto&&... /*bytes*/) {
    done = true;
    result = ec;
  });
  ioc.restart();
  ioc.run_for(timeout);
  if (done) {
    return result;
  }
  lowest.close();
  ioc.restart();
  ioc.run();  // the operation completes (aborted) and releases its state
  return beast::error::timeout;
}

std::runtime_error ws_failure(const std::string& what, std::uint16_t port,
                              const beast::error_code& ec) {
  return std::runtime_error("WsClient 127.0.0.1:" + std::to_string(port) + ": " + what + ": " +
                            ec.message());
}

}  // namespace

WsClient::WsClient(std::uint16_t port, std::string_view target, std::chrono::milliseconds timeout)
    : port_(port), timeout_(timeout) {
  auto& lowest = beast::get_lowest_layer(ws_);
  const net::ip::tcp::endpoint endpoint{net::ip::address_v4::loopback(), port};
  if (auto ec = run_ws_io(ioc_, lowest, timeout_, [&](auto handler) {
        lowest.async_connect(endpoint, [handler](beast::error_code e) mutable { handler(e); });
      })) {
    throw ws_failure("connect", port_, ec);
  }
  beast::error_code ignored;
  lowest.socket().set_option(net::ip::tcp::no_delay(true), ignored);
  ws_.read_message_max(kWsClientMaxMessage);
  ws_.write_buffer_bytes(kWsClientWriteBuffer);
  ws_.auto_fragment(false);
  ws_.control_callback([this](websocket::frame_type kind, beast::string_view payload) {
    control_.push_back({kind, std::string(payload)});
  });
  const std::string host = "127.0.0.1:" + std::to_string(port_);
  const std::string path(target);
  if (auto ec = run_ws_io(ioc_, lowest, timeout_, [&](auto handler) {
        ws_.async_handshake(response_, host, path, handler);
      })) {
    throw ws_failure("upgrade " + path + " (status " + std::to_string(response_.result_int()) + ")",
                     port_, ec);
  }
}

WsClient::~WsClient() {
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(ws_).close();
}

void WsClient::write(std::string_view payload, bool binary) {
  ws_.binary(binary);
  if (auto ec = run_ws_io(ioc_, beast::get_lowest_layer(ws_), timeout_, [&](auto handler) {
        ws_.async_write(net::buffer(payload.data(), payload.size()), handler);
      })) {
    throw ws_failure("write", port_, ec);
  }
}

WsMessage WsClient::read() {
  WsMessage message;
  buffer_.consume(buffer_.size());
  message.error = run_ws_io(ioc_, beast::get_lowest_layer(ws_), timeout_,
                            [&](auto handler) { ws_.async_read(buffer_, handler); });
  if (!message.error) {
    message.data = beast::buffers_to_string(buffer_.data());
    message.binary = ws_.got_binary();
  }
  return message;
}

void WsClient::ping(std::string_view payload) {
  const websocket::ping_data data(payload.begin(), payload.end());
  if (auto ec = run_ws_io(ioc_, beast::get_lowest_layer(ws_), timeout_,
                          [&](auto handler) { ws_.async_ping(data, handler); })) {
    throw ws_failure("ping", port_, ec);
  }
}

void WsClient::close() {
  if (auto ec = run_ws_io(ioc_, beast::get_lowest_layer(ws_), timeout_, [&](auto handler) {
        ws_.async_close(websocket::close_code::normal, handler);
      })) {
    throw ws_failure("close", port_, ec);
  }
}

}  // namespace sluice::testing
