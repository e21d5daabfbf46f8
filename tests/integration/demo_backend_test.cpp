// SPDX-License-Identifier: Apache-2.0
// The demo backend (gateway/demo) through the real binary: every route, keep-alive,
// pipelining, HEAD, streaming with flat memory, WebSocket echo and push. The fault settings,
// threads, signals and usage errors: demo_backend_faults_test.cpp.
#include "tests/integration/demo_backend_fixture.hpp"

namespace sluice {
namespace {

using namespace demo_backend_support;  // NOLINT(google-build-using-namespace)

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

}  // namespace
}  // namespace sluice
