// SPDX-License-Identifier: Apache-2.0
// The demo backend (gateway/demo) through the real binary: every route, keep-alive,
// pipelining, HEAD, streaming with flat memory, WebSocket echo and push, the fault settings
// (/healthz, /control and their command-line options), threads, signals and usage errors.
#include "tests/support/demo_backend.hpp"

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
#include "tests/support/endpoint_text.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/rss.hpp"
#include "tests/support/ws_client.hpp"

namespace sluice {
namespace {

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

constexpr std::uint64_t kMiB = std::uint64_t{1024} * 1024;

std::string port_header(const testing::Response& res) {
  return std::string(res[std::string_view("X-Backend-Port")]);
}

/// The first `size` bytes of the demo pattern (what /ws/push sends).
std::string pattern(std::size_t size) {
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

net::awaitable<void> run_raw_exchange(beast::tcp_stream& stream, std::uint16_t port,
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
RawExchange raw_exchange(std::uint16_t port, std::string_view request) {
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

TEST_F(DemoBackendTest, OkAnswersEveryMethodAndIgnoresTheQuery) {
  for (const auto method : {http::verb::get, http::verb::post, http::verb::delete_}) {
    const auto res = client_.request(method, "/ok?x=1&y=2");
    EXPECT_EQ(res.result_int(), 200U);
    EXPECT_EQ(res.body(), "ok\n");
    EXPECT_EQ(port_header(res), std::to_string(backend_.port()));
    EXPECT_FALSE(res[http::field::content_type].empty());
    EXPECT_TRUE(res.keep_alive());
  }
  EXPECT_EQ(backend_.endpoint(), "127.0.0.1:" + std::to_string(backend_.port()));
}

TEST_F(DemoBackendTest, UnknownPathsAre404Json) {
  const auto res = client_.get("/nope");
  EXPECT_EQ(res.result_int(), 404U);
  EXPECT_EQ(res.body(), R"({"error":"not_found"})");
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(port_header(res), std::to_string(backend_.port()));
  EXPECT_EQ(client_.get("/okay").result_int(), 404U);
}

TEST_F(DemoBackendTest, HeadIsGetWithoutABody) {
  const auto ok = client_.request(http::verb::head, "/ok");
  EXPECT_EQ(ok.result_int(), 200U);
  EXPECT_EQ(ok[http::field::content_length], "3");
  EXPECT_EQ(ok.body(), "");
  const auto bytes = client_.request(http::verb::head, "/bytes/123456");
  EXPECT_EQ(bytes[http::field::content_length], "123456");
  EXPECT_EQ(bytes.body(), "");
  // No stray body bytes: the connection still frames correctly.
  EXPECT_EQ(client_.get("/ok").body(), "ok\n");
}

TEST_F(DemoBackendTest, StatusAnswersWithTheCodeOrBadRequest) {
  const auto teapot = client_.get("/status/503");
  EXPECT_EQ(teapot.result_int(), 503U);
  EXPECT_EQ(teapot.body(), R"({"status":503})");
  EXPECT_EQ(client_.get("/status/599").result_int(), 599U);
  EXPECT_EQ(client_.get("/status/418").result_int(), 418U);
  const auto empty = client_.get("/status/204");
  EXPECT_EQ(empty.result_int(), 204U);
  EXPECT_EQ(empty.body(), "");
  for (const char* bad : {"/status/100", "/status/600", "/status/abc", "/status/", "/status/2x"}) {
    EXPECT_EQ(client_.get(bad).result_int(), 400U) << bad;
  }
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);  // still on one connection
  // A 1xx is interim and nothing final follows it here, so the backend closes after it.
  client_.send_raw("GET /status/150 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(client_.read_raw_until_close().rfind("HTTP/1.1 150 ", 0), 0U);
}

TEST_F(DemoBackendTest, SlowWaitsWithoutBlockingOtherConnections) {
  const auto res = get_while_waiting("/slow/1000", "/ok", std::chrono::milliseconds(1000));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "slow\n");
  EXPECT_EQ(client_.get("/slow/nope").result_int(), 400U);
}

TEST_F(DemoBackendTest, HeadersListsTheRequestFieldsInOrder) {
  const auto res = client_.get("/headers?q=1", {{"X-B", "2"}, {"X-A", "1"}, {"x-a", "3"}});
  ASSERT_EQ(res.result_int(), 200U);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  const auto json = nlohmann::json::parse(res.body());
  EXPECT_EQ(json["method"], "GET");
  EXPECT_EQ(json["target"], "/headers?q=1");
  const auto expected = nlohmann::json::parse(
      R"([["X-B","2"],["X-A","1"],["x-a","3"],["Host","127.0.0.1:)" +
      std::to_string(backend_.port()) + R"("],["User-Agent","sluice-test"]])");
  EXPECT_EQ(json["headers"], expected);
  EXPECT_EQ(res.body().find("\"method\""), 1U);  // keys in the documented order
}

TEST_F(DemoBackendTest, HeadersAnswersForEveryPathUnderItWithTheTargetAsReceived) {
  const auto res = client_.get("/headers/a/%2F/./b?x=/../");
  ASSERT_EQ(res.result_int(), 200U);
  EXPECT_EQ(nlohmann::json::parse(res.body())["target"], "/headers/a/%2F/./b?x=/../");
  EXPECT_EQ(client_.get("/headersx").result_int(), 404U);  // a longer name is not under it
}

TEST_F(DemoBackendTest, CloseRepliesThenClosesTheConnection) {
  const auto res = client_.get("/close");
  EXPECT_EQ(res.body(), "bye\n");
  EXPECT_EQ(res[http::field::connection], "close");
  EXPECT_TRUE(client_.closed_by_peer());
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);  // request() reconnects
}

TEST_F(DemoBackendTest, KeepsTheConnectionOpenBetweenRequests) {
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
  const auto local_port = client_.local_port();
  EXPECT_FALSE(client_.closed_by_peer(std::chrono::milliseconds(100)));
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
  EXPECT_EQ(client_.local_port(), local_port);
}

TEST_F(DemoBackendTest, EchoAndCountSmallBodies) {
  const auto echo = client_.request(http::verb::post, "/echo", {{"Content-Type", "text/x"}}, "abc");
  EXPECT_EQ(echo.body(), "abc");
  EXPECT_EQ(echo[http::field::content_type], "text/x");
  EXPECT_EQ(echo[http::field::content_length], "3");
  const auto untyped = client_.request(http::verb::put, "/echo", {}, "xyz");
  EXPECT_EQ(untyped[http::field::content_type], "application/octet-stream");
  const auto empty = client_.request(http::verb::post, "/echo");
  EXPECT_EQ(empty.body(), "");
  const auto count = client_.request(http::verb::post, "/count", {}, "hello");
  EXPECT_EQ(count.body(), R"({"bytes":5})");
  EXPECT_EQ(client_.get("/count").body(), R"({"bytes":0})");
  // A body sent to a route that ignores it is consumed, not mistaken for the next request.
  EXPECT_EQ(client_.request(http::verb::post, "/ok", {}, "GET /nope HTTP/1.1\r\n\r\n").body(),
            "ok\n");
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
}

TEST_F(DemoBackendTest, AnswersPipelinedRequestsInOrder) {
  client_.send_raw(
      "GET /slow/100 HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
      "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto first = client_.read_response();
  const auto second = client_.read_response();
  const auto third = client_.read_response();
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(first->body(), "slow\n");
  EXPECT_EQ(second->body(), "abcde");
  EXPECT_EQ((*second)[http::field::transfer_encoding], "chunked");
  EXPECT_EQ(third->body(), "ok\n");
}

TEST_F(DemoBackendTest, AnswersGarbageWith400AndCloses) {
  client_.send_raw("NOT HTTP AT ALL\r\n\r\n");
  const auto raw = client_.read_raw_until_close();
  EXPECT_EQ(raw.rfind("HTTP/1.1 400", 0), 0U) << raw;
}

TEST_F(DemoBackendTest, EchoStreamsLargeBodiesChunkedAndWithLength) {
  for (const bool chunked : {true, false}) {
    const StreamResult r = testing::stream_upload(backend_.port(), "/echo", 20 * kMiB, chunked);
    EXPECT_TRUE(r.complete) << r.error;
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200U);
    EXPECT_EQ(r.bytes_sent, 20 * kMiB);
    EXPECT_EQ(r.body_bytes, 20 * kMiB);
    EXPECT_TRUE(r.pattern_ok) << "first mismatch at " << r.first_mismatch;
    if (chunked) {
      EXPECT_EQ(r.header[http::field::transfer_encoding], "chunked");
    } else {
      EXPECT_EQ(r.header[http::field::content_length], std::to_string(20 * kMiB));
    }
  }
}

TEST_F(DemoBackendTest, CountConsumesLargeBodies) {
  const StreamResult r = testing::stream_upload(backend_.port(), "/count", 20 * kMiB, true);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.body_prefix, R"({"bytes":20971520})");
}

TEST_F(DemoBackendTest, BytesStreamsTheDocumentedPattern) {
  const StreamResult r = testing::stream_download(backend_.port(), "/bytes/50000000");
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.header[http::field::content_length], "50000000");
  EXPECT_EQ(r.body_bytes, 50000000U);
  EXPECT_TRUE(r.pattern_ok) << "first mismatch at " << r.first_mismatch;
  EXPECT_EQ(client_.get("/bytes/0").body(), "");
  EXPECT_EQ(client_.get("/bytes/5").body(), "ABCDE");
}

TEST_F(DemoBackendTest, EchoMemoryStaysFlatFor200MiB) {
  const std::size_t before = testing::rss_bytes(backend_.pid());
  std::atomic<bool> done{false};
  std::atomic<std::size_t> peak{before};
  std::thread sampler([&] {
    while (!done.load()) {
      peak.store(std::max(peak.load(), testing::rss_bytes(backend_.pid())));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const StreamResult r = testing::stream_upload(backend_.port(), "/echo", 200 * kMiB, true);
  done.store(true);
  sampler.join();
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.body_bytes, 200 * kMiB);
  EXPECT_TRUE(r.pattern_ok);
  EXPECT_LT(peak.load() - before, 30 * kMiB) << "rss before " << before << ", peak " << peak;
}

TEST_F(DemoBackendTest, WsEchoReturnsEachMessageWithItsType) {
  WsClient ws(backend_.port(), "/ws/echo?ignored=1");
  EXPECT_EQ(ws.upgrade_response().result_int(), 101U);
  EXPECT_EQ(ws.upgrade_response()["X-Backend-Port"], std::to_string(backend_.port()));
  EXPECT_EQ(ws.upgrade_response()["Sec-WebSocket-Extensions"], "");  // no permessage-deflate
  const std::string binary("\0\xff\x01 binary", 10);
  for (int i = 0; i < 3; ++i) {
    ws.write("hello", false);
    const auto text = ws.read();
    ASSERT_FALSE(text.error) << text.error.message();
    EXPECT_EQ(text.data, "hello");
    EXPECT_FALSE(text.binary);
    ws.write(binary, true);
    const auto bytes = ws.read();
    ASSERT_FALSE(bytes.error) << bytes.error.message();
    EXPECT_EQ(bytes.data, binary);
    EXPECT_TRUE(bytes.binary);
  }
  ws.write("", true);
  EXPECT_EQ(ws.read().data, "");
  ws.close();
  EXPECT_EQ(ws.close_reason().code, websocket::close_code::normal);
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);  // the backend serves on
}

TEST_F(DemoBackendTest, WsEchoCarriesA4MiBMessage) {
  WsClient ws(backend_.port(), "/ws/echo");
  const std::string big = pattern(4 * kMiB);
  ws.write(big, true);
  const auto echo = ws.read();
  ASSERT_FALSE(echo.error) << echo.error.message();
  EXPECT_TRUE(echo.binary);
  EXPECT_EQ(echo.data.size(), big.size());
  EXPECT_TRUE(echo.data == big) << "the echo differs from the message";
  ws.write(big, false);  // the pattern is ASCII, so valid UTF-8 text
  EXPECT_EQ(ws.read().data.size(), big.size());
}

TEST_F(DemoBackendTest, WsEchoAnswersAPingWithAPong) {
  WsClient ws(backend_.port(), "/ws/echo");
  ws.ping("are-you-there");
  ws.write("after the ping", false);
  const auto echo = ws.read();  // the pong arrives first; Beast reports it while reading
  EXPECT_EQ(echo.data, "after the ping");
  ASSERT_EQ(ws.control_frames().size(), 1U);
  EXPECT_EQ(ws.control_frames()[0].kind, websocket::frame_type::pong);
  EXPECT_EQ(ws.control_frames()[0].payload, "are-you-there");
}

TEST_F(DemoBackendTest, WsPushSendsNMessagesThenCloses) {
  WsClient ws(backend_.port(), "/ws/push?size=100000&n=5");
  const std::string expected = pattern(100000);
  for (int i = 0; i < 5; ++i) {
    const auto message = ws.read();
    ASSERT_FALSE(message.error) << "message " << i << ": " << message.error.message();
    EXPECT_TRUE(message.binary);
    EXPECT_TRUE(message.data == expected) << "message " << i << " differs";
  }
  EXPECT_EQ(ws.read().error, websocket::error::closed);
  EXPECT_EQ(ws.close_reason().code, websocket::close_code::normal);
  WsClient none(backend_.port(), "/ws/push?n=0&size=10");
  EXPECT_EQ(none.read().error, websocket::error::closed);
}

TEST_F(DemoBackendTest, WsRoutesAnswerPlainRequestsWith426) {
  for (const char* target : {"/ws/echo", "/ws/push?n=1&size=1"}) {
    const auto res = client_.get(target);
    EXPECT_EQ(res.result_int(), 426U) << target;
    EXPECT_EQ(res[http::field::upgrade], "websocket");
    EXPECT_EQ(res.body(), R"({"error":"upgrade_required"})");
    EXPECT_TRUE(res.keep_alive());
  }
  for (const char* bad : {"/ws/push", "/ws/push?n=1", "/ws/push?n=x&size=1",
                          "/ws/push?n=1&size=67108865", "/ws/push?n=1000001&size=1"}) {
    EXPECT_EQ(client_.get(bad).result_int(), 400U) << bad;
    EXPECT_THROW(WsClient(backend_.port(), bad), std::runtime_error) << bad;
  }
  // Frames sent before the 101 (RFC 6455 forbids it) could not reach the WebSocket: a 400.
  HttpClient early(backend_.port());
  early.send_raw(
      "GET /ws/echo HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\nearly");
  EXPECT_EQ(early.read_raw_until_close().rfind("HTTP/1.1 400", 0), 0U);
}

TEST_F(DemoBackendTest, HealthzFollowsTheHealthSetByControl) {
  const auto up = client_.get("/healthz");
  EXPECT_EQ(up.result_int(), 200U);
  EXPECT_EQ(up.body(), R"({"status":"up"})");
  EXPECT_EQ(up[http::field::content_type], "application/json");
  const auto state = client_.get("/control");
  EXPECT_EQ(state.result_int(), 200U);
  EXPECT_EQ(state.body(), R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0})");

  EXPECT_EQ(control("health=down")["health"], "down");
  const auto down = client_.get("/healthz");
  EXPECT_EQ(down.result_int(), 503U);
  EXPECT_EQ(down.body(), R"({"status":"down"})");
  EXPECT_TRUE(down.keep_alive());
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);  // health is /healthz's alone
  EXPECT_EQ(nlohmann::json::parse(client_.get("/control").body())["health"], "down");

  EXPECT_EQ(control("health=up").dump(),
            R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0})");
  EXPECT_EQ(client_.get("/healthz").result_int(), 200U);
}

TEST_F(DemoBackendTest, FailPercentFailsExactlyThatShareSpreadEvenly) {
  EXPECT_EQ(control("fail_percent=10")["fail_percent"], 10);
  std::vector<int> failed;
  for (int i = 0; i < 100; ++i) {
    const auto res = client_.get("/ok");
    if (res.result_int() == 503) {
      EXPECT_EQ(res.body(), R"({"error":"injected_failure"})");
      EXPECT_TRUE(res.keep_alive());
      failed.push_back(i);
    } else {
      EXPECT_EQ(res.result_int(), 200U) << i;
    }
    // Neither /healthz nor /control counts or fails.
    EXPECT_EQ(client_.get("/healthz").result_int(), 200U);
    EXPECT_EQ(client_.get("/control").result_int(), 200U);
  }
  EXPECT_EQ(failed, (std::vector<int>{9, 19, 29, 39, 49, 59, 69, 79, 89, 99}));
  control("fail_percent=100");
  EXPECT_EQ(client_.get("/nope").result_int(), 503U);  // every other route, unknown ones too
  EXPECT_EQ(client_.request(http::verb::post, "/echo", {}, "abc").result_int(), 503U);
  EXPECT_EQ(client_.get("/ok").result_int(), 503U);  // the body was read, not taken as a request
  control("fail_percent=0");
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
}

TEST(DemoBackendProcessTest, FailPercentCountsAcrossThreadsAndConnections) {
  DemoBackend backend(2);
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<HttpClient>(backend.port()));
  }
  ASSERT_EQ(clients[0]->request(http::verb::post, "/control?fail_percent=25").result_int(), 200U);
  int failures = 0;
  for (int i = 0; i < 100; ++i) {
    failures += clients[i % clients.size()]->get("/ok").result_int() == 503 ? 1 : 0;
  }
  EXPECT_EQ(failures, 25);
}

TEST_F(DemoBackendTest, ResetFailuresCloseWithAnRstAndNoBytes) {
  control("fail_percent=100&fail_status=reset");
  const auto get = raw_exchange(backend_.port(), "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(get.end, net::error::connection_reset) << get.end.message();
  EXPECT_EQ(get.bytes, "");
  const auto post = raw_exchange(
      backend_.port(), "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(post.end, net::error::connection_reset) << post.end.message();
  EXPECT_EQ(post.bytes, "");
  // /healthz and /control still answer, so the instance can be healed.
  const auto health = raw_exchange(backend_.port(),
                                   "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.end, net::error::eof) << health.end.message();
  EXPECT_EQ(health.bytes.rfind("HTTP/1.1 200 ", 0), 0U) << health.bytes;
  EXPECT_EQ(control("fail_percent=0")["fail_status"], "reset");
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
}

TEST_F(DemoBackendTest, DelayHoldsUpEveryAnswerButControlsWithoutBlocking) {
  constexpr std::chrono::milliseconds kDelay{1000};
  EXPECT_EQ(control("delay_ms=1000")["delay_ms"], 1000);
  const auto res = get_while_waiting("/ok", "/control", kDelay);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "ok\n");
  // /healthz is delayed too, so a health check with a shorter timeout fails.
  const auto health = get_while_waiting("/healthz", "/control", kDelay);
  ASSERT_TRUE(health);
  EXPECT_EQ(health->result_int(), 200U);
  control("delay_ms=0");
  const auto started = Clock::now();
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
  EXPECT_LT(Clock::now() - started, kDelay);
}

TEST_F(DemoBackendTest, BadControlRequestsAre400AndChangeNothing) {
  const std::string initial = client_.get("/control").body();
  for (const auto& [query, parameter] :
       std::vector<std::pair<std::string, std::string>>{{"health=sideways", "health"},
                                                        {"fail_percent=101", "fail_percent"},
                                                        {"fail_percent=ten", "fail_percent"},
                                                        {"fail_status=500", "fail_status"},
                                                        {"delay_ms=600001", "delay_ms"},
                                                        {"fail_percent=50&delay_ms=-5", "delay_ms"},
                                                        {"colour=red", "colour"}}) {
    const auto res = client_.request(http::verb::post, "/control?" + query);
    EXPECT_EQ(res.result_int(), 400U) << query;
    EXPECT_EQ(res[http::field::content_type], "application/json");
    const auto json = nlohmann::json::parse(res.body());
    EXPECT_EQ(json["parameter"], parameter) << query;
    EXPECT_EQ(json["error"], parameter == "colour" ? "unknown_parameter" : "bad_parameter");
    EXPECT_TRUE(res.keep_alive());
  }
  EXPECT_EQ(client_.get("/control").body(), initial);
  const auto get = client_.get("/control?health=down");
  EXPECT_EQ(get.result_int(), 400U);
  EXPECT_EQ(get.body(), R"({"error":"changes_need_post"})");
  const auto put = client_.request(http::verb::put, "/control?health=down");
  EXPECT_EQ(put.result_int(), 405U);
  EXPECT_EQ(put[http::field::allow], "GET, HEAD, POST");
  EXPECT_EQ(client_.get("/control").body(), initial);
}

TEST(DemoBackendProcessTest, FaultOptionsSetTheInitialState) {
  OptionedBackend backend(
      {"--health", "down", "--fail-percent=100", "--fail-status", "503", "--delay-ms", "200"});
  ASSERT_NE(backend.port(), 0) << backend.process().output();
  HttpClient client(backend.port());
  const auto state = client.get("/control");
  EXPECT_EQ(state.body(),
            R"({"health":"down","fail_percent":100,"fail_status":"503","delay_ms":200})");
  const auto started = Clock::now();
  EXPECT_EQ(client.get("/healthz").result_int(), 503U);
  EXPECT_GE(Clock::now() - started, std::chrono::milliseconds(200));
  EXPECT_EQ(client.get("/ok").body(), R"({"error":"injected_failure"})");

  OptionedBackend resetting({"--fail-percent", "50", "--fail-status=reset"});
  ASSERT_NE(resetting.port(), 0) << resetting.process().output();
  const auto request = "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(raw_exchange(resetting.port(), request).end, net::error::eof);  // the 1st passes
  const auto second = raw_exchange(resetting.port(), request);
  EXPECT_EQ(second.end, net::error::connection_reset) << second.end.message();
  EXPECT_EQ(second.bytes, "");
}

TEST(DemoBackendProcessTest, ThreadsShareOnePort) {
  DemoBackend backend(3);
  for (int i = 0; i < 12; ++i) {
    HttpClient client(backend.port());
    EXPECT_EQ(port_header(client.get("/ok")), std::to_string(backend.port()));
  }
}

TEST(DemoBackendProcessTest, ExitsZeroOnSigtermAndSigint) {
  DemoBackend terminated(2);
  EXPECT_EQ(terminated.stop(), 0) << terminated.process().output();
  DemoBackend interrupted;
  HttpClient idle(interrupted.port());  // an open connection doesn't hold the exit up
  ASSERT_TRUE(interrupted.process().send_signal(SIGINT));
  EXPECT_EQ(interrupted.process().wait_exit(), 0) << interrupted.process().output();
  EXPECT_TRUE(idle.closed_by_peer());
}

TEST(DemoBackendProcessTest, BadArgumentsExitTwoWithAMessage) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--threads", "0"},
                                                                {"--port", "70000"},
                                                                {"--address", "nowhere"},
                                                                {"--bogus"},
                                                                {"--port"},
                                                                {"--health", "sick"},
                                                                {"--fail-percent", "101"},
                                                                {"--fail-status", "500"},
                                                                {"--delay-ms", "600001"},
                                                                {"--delay-ms"}}) {
    std::vector<std::string> argv{SLUICE_DEMO_BACKEND};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv);
    EXPECT_EQ(p.wait_exit(), 2) << args[0];
    EXPECT_NE(p.stderr_text().find("usage: sluice-demo-backend"), std::string::npos);
    EXPECT_EQ(p.stdout_text(), "");
  }
}

TEST(DemoBackendProcessTest, ExitsOneWhenThePortIsTaken) {
  const testing::RawPeer holder(testing::RawPeer::Mode::kNeverAnswer);  // no SO_REUSEPORT
  ChildProcess p({SLUICE_DEMO_BACKEND, "--port", std::to_string(holder.port())});
  EXPECT_EQ(p.wait_exit(), 1) << p.output();
  EXPECT_NE(p.stderr_text().find("sluice-demo-backend: "), std::string::npos);
}

}  // namespace
}  // namespace sluice
