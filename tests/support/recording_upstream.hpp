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
#include <vector>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// An in-process upstream on 127.0.0.1:0 that records every request's exact bytes (head and
/// body, as they arrived) and answers each with scripted raw bytes, for the conformance tests:
/// what the gateway forwards is compared byte for byte, and what the upstream answers can be any
/// malformed or unusual response. A request ends where Beast's parser says it ends (several
/// requests on one connection are recorded one by one).
///
/// Thread-safety: all public members are thread-safe (the upstream runs on its own thread).
/// Lifetime: the destructor closes every connection and joins the thread.
class RecordingUpstream {
 public:
  /// What the upstream sends for each request: `bytes` as they are, then, with `close`, it
  /// shuts its side down (FIN) and drops the connection once the gateway closes too.
  struct Reply {
    std::string bytes = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    bool close = false;
  };

  RecordingUpstream();
  ~RecordingUpstream();
  RecordingUpstream(const RecordingUpstream&) = delete;
  RecordingUpstream& operator=(const RecordingUpstream&) = delete;

  /// "127.0.0.1:PORT", as a gateway config endpoint.
  [[nodiscard]] std::string endpoint() const;

  /// The reply for the requests that arrive from now on.
  void reply_with(Reply reply);

  /// Every request recorded so far, in arrival order.
  [[nodiscard]] std::vector<std::string> requests() const;
  [[nodiscard]] std::size_t request_count() const;
  /// Connections accepted so far.
  [[nodiscard]] std::size_t accepted() const;
  /// Waits until at least `n` requests were recorded; false on timeout.
  [[nodiscard]] bool wait_for_requests(std::size_t n,
                                       std::chrono::milliseconds timeout = kDefaultTimeout) const;

 private:
  struct Connection;  // recording_upstream.cpp
  [[nodiscard]] Reply current_reply() const;
  void record(std::string request);

  boost::asio::io_context ioc_{1};
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  std::uint16_t port_ = 0;
  std::thread thread_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  Reply reply_;
  std::vector<std::string> requests_;
  std::size_t accepted_ = 0;
};

}  // namespace sluice::testing
