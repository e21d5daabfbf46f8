// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/net.hpp"

namespace sluice::proxy {

/// A deadline that CANCELS a stream's pending operations when it expires, leaving the socket
/// open (tcp_stream's own expiry closes it, and a late client still deserves its 408; a late
/// upstream head is a 504 while the request body may still be streaming).
///
/// The timer's handler holds only shared state, never the stream: disarm() (or destruction)
/// before the stream can go away makes a handler that is already queued do nothing. A new arm()
/// likewise retires the handler of the previous one. Confined to the stream's thread.
class IoDeadline {
 public:
  explicit IoDeadline(const net::any_io_executor& executor)
      : timer_(executor), state_(std::make_shared<State>()) {}
  ~IoDeadline() { disarm(); }
  IoDeadline(const IoDeadline&) = delete;
  IoDeadline& operator=(const IoDeadline&) = delete;
  IoDeadline(IoDeadline&&) = delete;
  IoDeadline& operator=(IoDeadline&&) = delete;

  void arm(beast::tcp_stream& stream, core::Duration timeout) {
    state_->stream = &stream;
    state_->expired = false;
    const std::uint64_t generation = ++state_->generation;
    timer_.expires_after(timeout);
    timer_.async_wait([state = state_, generation](beast::error_code ec) {
      if (!ec && state->generation == generation && state->stream != nullptr) {
        state->expired = true;
        state->stream->cancel();
        state->stream = nullptr;
      }
    });
  }

  void disarm() noexcept {
    state_->stream = nullptr;
    boost::system::error_code ignored;
    timer_.cancel(ignored);  // the overload that reports instead of throwing
  }

  /// True if the last arm() expired before disarm().
  [[nodiscard]] bool expired() const noexcept { return state_->expired; }

 private:
  struct State {
    beast::tcp_stream* stream = nullptr;  // null once disarmed
    bool expired = false;
    std::uint64_t generation = 0;
  };
  net::steady_timer timer_;
  std::shared_ptr<State> state_;
};

}  // namespace sluice::proxy
