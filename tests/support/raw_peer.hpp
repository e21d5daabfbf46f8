// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// An in-process upstream on 127.0.0.1:0 that misbehaves on purpose, for the gateway's
/// upstream-failure tests. Every connection gets the same behaviour (Mode). A "request" is
/// counted once its header has been read.
///
/// Thread-safety: all public members are thread-safe (the peer runs on its own thread; the
/// counters are guarded). Lifetime: the destructor closes every connection and joins the thread.
class RawPeer {
 public:
  enum class Mode {
    kNeverAnswer,             // read everything, never respond, keep the connection open
    kCloseAfterRequest,       // read the request header, then close (FIN) without responding
    kResetAfterRequest,       // read the request header, then reset (RST, SO_LINGER {1, 0})
    kPartialBodyThenReset,    // 200 with Content-Length: 1000000 but 1000 body bytes, then RST
    kPartialBodyThenClose,    // the same, then FIN
    kRespondOkThenCloseIdle,  // answer each request 200 "ok\n" with keep-alive headers; close
                              // (FIN) once the connection has been idle for `idle_close`
    kRefuse,                  // nothing listens: the port is bound (so no one else gets it) but
                              // connections are refused
  };

  /// Starts serving at once. `idle_close` matters only for kRespondOkThenCloseIdle.
  explicit RawPeer(Mode mode,
                   std::chrono::milliseconds idle_close = std::chrono::milliseconds(200));
  ~RawPeer();
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// "127.0.0.1:PORT", as a gateway config endpoint.
  [[nodiscard]] std::string endpoint() const;
  [[nodiscard]] Mode mode() const noexcept { return mode_; }

  /// Connections accepted so far.
  [[nodiscard]] std::size_t accepted() const;
  /// Request headers read so far (over all connections).
  [[nodiscard]] std::size_t requests() const;
  /// Connections kRespondOkThenCloseIdle closed because they idled for `idle_close` (counted
  /// once the FIN is sent; connections the other side closed first are not counted).
  [[nodiscard]] std::size_t idle_closes() const;
  /// Wait until at least `n` connections / requests / idle closes were seen; false on timeout.
  [[nodiscard]] bool wait_for_accepted(std::size_t n,
                                       std::chrono::milliseconds timeout = kDefaultTimeout) const;
  [[nodiscard]] bool wait_for_requests(std::size_t n,
                                       std::chrono::milliseconds timeout = kDefaultTimeout) const;
  [[nodiscard]] bool wait_for_idle_closes(
      std::size_t n, std::chrono::milliseconds timeout = kDefaultTimeout) const;

  /// A port that refuses connections: bind 127.0.0.1:0, read the port, close. (Another process
  /// may take it afterwards; RawPeer(Mode::kRefuse) keeps it reserved instead.)
  static std::uint16_t refused_port();

  /// How long the partial-body modes wait after their bytes before the FIN or RST, so the
  /// client has read them first.
  static constexpr std::chrono::milliseconds kPartialPause{50};

 private:
  struct Connection;  // raw_peer.cpp
  void count_accepted();
  void count_request();
  void count_idle_close();

  const Mode mode_;
  const std::chrono::milliseconds idle_close_;
  boost::asio::io_context ioc_{1};  // outlives the acceptor and every connection
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  std::uint16_t port_ = 0;
  std::thread thread_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::size_t accepted_ = 0;
  std::size_t requests_ = 0;
  std::size_t idle_closes_ = 0;
};

}  // namespace sluice::testing
