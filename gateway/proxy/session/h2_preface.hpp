// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <chrono>
#include <string_view>

#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/io/net.hpp"

namespace sluice::proxy {

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether a plain connection starts with the HTTP/2 preface (h2c with prior knowledge,
/// docs/http2.md), judged by peeking: nothing is read, so either session reads from the start.
/// Any other first byte answers false at once (an HTTP/1.1 request never starts with "PRI *
/// HTTP/2.0"). A preface split across segments is peeked again every few milliseconds until
/// whole or until `deadline` (armed by the caller) expires. Errors answer false: the HTTP/1.1
/// session then meets them itself.
inline Task<bool> starts_with_h2_preface(Socket& socket, Deadline& deadline,
                                         std::pmr::memory_resource* ops) {
  using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                          net::wait_traits<std::chrono::steady_clock>, Executor>;
  std::array<char, kH2Preface.size()> seen{};
  for (;;) {
    auto [ec] = co_await socket.async_wait(Socket::wait_read, pooled(ops));
    if (ec || deadline.expired()) {
      co_return false;
    }
    boost::system::error_code peek_error;
    const std::size_t n = socket.receive(net::buffer(seen), Socket::message_peek, peek_error);
    if (peek_error || n == 0 || std::string_view(seen.data(), n) != kH2Preface.substr(0, n)) {
      co_return false;
    }
    if (n == kH2Preface.size()) {
      co_return true;
    }
    Timer pause(socket.get_executor());  // part of the preface: the rest is on its way
    pause.expires_after(std::chrono::milliseconds(5));
    co_await pause.async_wait(pooled(ops));
  }
}

}  // namespace sluice::proxy
