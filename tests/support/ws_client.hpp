// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

namespace websocket = boost::beast::websocket;

/// One message read by WsClient::read(); `error` is set instead when none arrived
/// (websocket::error::closed after the peer's close frame, beast::error::timeout, ...).
struct WsMessage {
  boost::system::error_code error;
  std::string data;
  bool binary = false;
};

/// A ping, pong or close frame WsClient saw while reading (Beast's control_callback).
struct WsControlFrame {
  websocket::frame_type kind = websocket::frame_type::ping;
  std::string payload;
};

/// A synchronous WebSocket test client on Beast's websocket::stream, one connection to
/// 127.0.0.1:PORT, with its own io_context. Every operation is bounded by the timeout given
/// at construction (5 s by default); on expiry the connection is closed and the call fails.
/// Messages up to 64 MiB + 1 byte are accepted; permessage-deflate is off. The constructor,
/// write(), ping() and close() throw std::runtime_error on failure (gtest reports it as a
/// failed test); read() reports through its result.
///
/// Thread-safety: confined to one thread. Lifetime: owns its connection.
class WsClient {
 public:
  /// Connects and upgrades with `GET target`; throws if either fails (a refused upgrade names
  /// the status the server answered).
  WsClient(std::uint16_t port, std::string_view target,
           std::chrono::milliseconds timeout = kDefaultTimeout);
  ~WsClient();
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  /// Sends one message as a text (UTF-8) or binary message.
  void write(std::string_view payload, bool binary);
  /// Reads the next message. Ping and pong frames that arrive first are answered by Beast
  /// (pings) and listed in control_frames().
  WsMessage read();
  /// Sends a ping frame (payload <= 125 bytes); its pong shows up during a later read().
  void ping(std::string_view payload);
  /// The closing handshake with code 1000: sends a close frame and reads until the peer's.
  void close();

  /// The server's answer to the upgrade request (101 on success).
  [[nodiscard]] const websocket::response_type& upgrade_response() const noexcept {
    return response_;
  }
  /// Control frames seen so far, in order of arrival.
  [[nodiscard]] const std::vector<WsControlFrame>& control_frames() const noexcept {
    return control_;
  }
  /// The close frame the peer sent (code 0 until one arrived).
  [[nodiscard]] websocket::close_reason close_reason() const { return ws_.reason(); }

 private:
  std::uint16_t port_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context ioc_;
  websocket::stream<boost::beast::tcp_stream> ws_{ioc_};
  boost::beast::flat_buffer buffer_;
  websocket::response_type response_;
  std::vector<WsControlFrame> control_;
};

}  // namespace sluice::testing
