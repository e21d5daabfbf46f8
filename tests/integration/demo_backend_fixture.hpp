// SPDX-License-Identifier: Apache-2.0
#pragma once

// Demo backend integration helpers (gateway/demo): the backend as a child process with options,
// raw and Beast clients. Tests: demo_backend_test.cpp (routes, keep-alive, streaming, WebSocket)
// and demo_backend_faults_test.cpp (the fault settings, threads, signals and usage errors).

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <csignal>
#include <nlohmann/json.hpp>
#include <thread>

#include "gateway/demo/byte_pattern.hpp"
#include "tests/support/as_tuple.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/demo_backend.hpp"
#include "tests/support/endpoint_text.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/rss.hpp"
#include "tests/support/ws_client.hpp"

namespace sluice {
namespace demo_backend_support {

using testing::ChildProcess;
using testing::DemoBackend;
using testing::HttpClient;
using testing::StreamResult;
using testing::WsClient;
namespace websocket = boost::beast::websocket;
using Clock = std::chrono::steady_clock;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

inline constexpr std::uint64_t kMiB = std::uint64_t{1024} * 1024;

inline std::string port_header(const testing::Response& res) {
  return std::string(res[std::string_view("X-Backend-Port")]);
}

/// The first `size` bytes of the demo pattern (what /ws/push sends).
inline std::string pattern(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = demo::pattern_byte(i);
  }
  return bytes;
}

/// What one connection saw: the bytes that arrived before the peer closed it, and how the
/// reading ended (eof for a FIN, connection_reset for an RST, timed_out after the bound).
struct RawExchange {
  std::string bytes;
  boost::system::error_code end;
};

inline net::awaitable<void> run_raw_exchange(beast::tcp_stream& stream, std::uint16_t port,
                                             std::string_view request, RawExchange& out) {
  stream.expires_after(testing::kDefaultTimeout);
  const net::ip::tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), port);
  if (auto [ec] = co_await stream.async_connect(endpoint, testing::kAsTuple); ec) {
    out.end = ec;
    co_return;
  }
  if (auto [ec, n] = co_await net::async_write(stream, net::buffer(request), testing::kAsTuple);
      ec) {
    out.end = ec;
    co_return;
  }
  std::array<char, 4096> piece{};
  for (;;) {
    auto [ec, n] = co_await stream.async_read_some(net::buffer(piece), testing::kAsTuple);
    out.bytes.append(piece.data(), n);
    if (ec) {
      out.end = ec == beast::error::timeout ? net::error::timed_out : ec;
      co_return;
    }
  }
}

/// Sends `request` on a new connection to 127.0.0.1:PORT and reads until the peer ends it
/// (bounded by kDefaultTimeout), to tell a reset from a close, which HttpClient does not.
inline RawExchange raw_exchange(std::uint16_t port, std::string_view request) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  RawExchange out;
  net::co_spawn(ioc, run_raw_exchange(stream, port, request, out), net::detached);
  ioc.run();
  return out;
}

/// A demo backend started with `options` (DemoBackend takes none beyond --threads).
class OptionedBackend {
 public:
  explicit OptionedBackend(const std::vector<std::string>& options)
      : process_(with_binary(options)) {
    std::string line;
    if (process_.wait_for_line(testing::OutputStream::kStdout, "listening ",
                               testing::kDefaultTimeout, &line)) {
      port_ = testing::parse_port(line).value_or(0);
    }
  }
  /// 0 if the backend did not say where it listens (the test asserts on it).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] ChildProcess& process() noexcept { return process_; }

 private:
  static std::vector<std::string> with_binary(const std::vector<std::string>& options) {
    std::vector<std::string> argv{SLUICE_DEMO_BACKEND, "--port", "0"};
    argv.insert(argv.end(), options.begin(), options.end());
    return argv;
  }

  ChildProcess process_;
  std::uint16_t port_ = 0;
};

class DemoBackendTest : public ::testing::Test {
 protected:
  // A clean exit also means no sanitizer report in the backend (ASan builds exit non-zero).
  void TearDown() override {
    client_.close();
    EXPECT_EQ(backend_.stop(), 0) << backend_.process().output();
  }

  /// Sends `GET slow_target` on client_ and meanwhile `GET quick_target` on a second
  /// connection, which must be answered within `wait`: the backend has one thread, and one
  /// that blocked it would answer only after the slow request. Returns the slow request's
  /// response, which must have taken at least `wait`.
  std::optional<testing::Response> get_while_waiting(std::string_view slow_target,
                                                     std::string_view quick_target,
                                                     std::chrono::milliseconds wait) {
    const auto started = Clock::now();
    client_.send_raw("GET " + std::string(slow_target) + " HTTP/1.1\r\nHost: a\r\n\r\n");
    HttpClient second(backend_.port());
    EXPECT_EQ(second.get(quick_target).result_int(), 200U) << quick_target;
    EXPECT_LT(Clock::now() - started, wait) << quick_target << " waited for " << slow_target;
    auto res = client_.read_response();
    EXPECT_GE(Clock::now() - started, wait) << slow_target;
    return res;
  }

  /// POSTs `/control?query` and returns its JSON answer, keys in order (asserting the 200).
  nlohmann::ordered_json control(std::string_view query) {
    const auto res = client_.request(http::verb::post, "/control?" + std::string(query));
    EXPECT_EQ(res.result_int(), 200U) << query << ": " << res.body();
    return nlohmann::ordered_json::parse(res.body());
  }

  DemoBackend backend_;
  HttpClient client_{backend_.port()};
};

}  // namespace demo_backend_support
}  // namespace sluice
