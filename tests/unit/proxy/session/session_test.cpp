// SPDX-License-Identifier: Apache-2.0
// The whole request path over Beast's in-memory streams, on a manual clock: the session reads
// the client's bytes, the steps judge, the exchange talks to a scripted upstream, and the test
// reads exactly what the client and the upstream received. No socket, no sleep.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <string>

#include "tests/support/proxy_world.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ProxyWorld;
using testing::TestStream;
using testing::world_config;

constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// One client connection into the world's session.
class Client {
 public:
  explicit Client(ProxyWorld& world) : world_(world), client_(world.ioc.get_executor()) {
    TestStream down(world.ioc.get_executor());
    client_.connect(down);
    Peer peer{boost::asio::ip::make_address("192.0.2.7"), "192.0.2.7"};
    boost::asio::co_spawn(world.ioc,
                          run_session(std::move(down), std::move(peer), world.env, world.upstream,
                                      ConnectionSlot(world.gate)),
                          [this](const std::exception_ptr&) { ended_ = true; });
  }
  /// Sends bytes as the client.
  void send(std::string_view bytes) {
    boost::asio::write(client_, boost::asio::buffer(bytes.data(), bytes.size()));
    world_.run();
  }
  /// Everything the client received so far.
  [[nodiscard]] std::string received() const { return std::string(client_.str()); }
  void close() {
    client_.close();
    world_.run();
  }
  [[nodiscard]] bool ended() const { return ended_; }

 private:
  ProxyWorld& world_;
  TestStream client_;
  bool ended_ = false;
};

TEST(SessionTest, ProxiesARequestAndForwardsTheEditedHead) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back(kOk);
  Client client(world);
  client.send("GET /a/./b?q=1 HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nX-Req: 1\r\n\r\n");
  const std::string answer = client.received();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_NE(answer.find("X-Request-Id: "), std::string::npos);
  EXPECT_TRUE(answer.ends_with("\r\n\r\nok")) << answer;
  const std::string upstream = world.connector.received(0);
  EXPECT_TRUE(upstream.starts_with("GET /a/b?q=1 HTTP/1.1\r\nHost: h\r\nX-Req: 1\r\n")) << upstream;
  EXPECT_NE(upstream.find("X-Forwarded-For: 192.0.2.7\r\n"), std::string::npos);
  EXPECT_EQ(upstream.find("Connection"), std::string::npos);
  EXPECT_FALSE(client.ended());  // keep-alive: waiting for the next request
  client.close();
  EXPECT_TRUE(client.ended());
}

/// The upstream end of connection `i` answers with `bytes` (after what it received so far).
void answer(ProxyWorld& world, std::size_t i, std::string_view bytes) {
  boost::asio::write(*world.connector.peers.at(i), boost::asio::buffer(bytes.data(), bytes.size()));
  world.run();
}

TEST(SessionTest, ReusesThePooledConnectionForTheNextRequest) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back(kOk);
  Client client(world);
  client.send("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
  client.send("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(world.connector.connects, 1);
  EXPECT_NE(world.connector.received(0).find("GET /2 HTTP/1.1"), std::string::npos);
  answer(world, 0, kOk);
  const std::string answers = client.received();
  EXPECT_EQ(answers.find("HTTP/1.1 200"), 0U);
  EXPECT_NE(answers.find("HTTP/1.1 200", 10), std::string::npos) << answers;
}

TEST(SessionTest, DropsAPooledConnectionThatSentBytesNobodyAskedFor) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back(kOk);
  world.connector.responses.emplace_back(kOk);
  Client client(world);
  client.send("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
  answer(world, 0, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nlate!");  // while idle
  client.send("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(world.connector.connects, 2);  // the out-of-step connection was not reused
  EXPECT_EQ(client.received().find("late!"), std::string::npos);
  EXPECT_EQ(world.connector.received(0).find("GET /2"), std::string::npos);
}

TEST(SessionTest, DropsAPooledConnectionTheUpstreamClosed) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back(kOk);
  world.connector.responses.emplace_back(kOk);
  Client client(world);
  client.send("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
  world.connector.peers.at(0)->close();  // the upstream ends its idle keep-alive connection
  world.run();
  client.send("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(world.connector.connects, 2);
  EXPECT_NE(client.received().find("HTTP/1.1 200", 10), std::string::npos) << client.received();
}

TEST(SessionTest, AnswersPipelinedRequestsInOrder) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
  Client client(world);
  client.send("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
  // The second request went upstream once the first was answered, on the same connection.
  EXPECT_NE(world.connector.received(0).find("GET /2 HTTP/1.1"), std::string::npos);
  answer(world, 0, "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nB");
  const std::string answers = client.received();
  const auto second = answers.find("HTTP/1.1 201");
  ASSERT_NE(second, std::string::npos) << answers;
  EXPECT_LT(answers.find("\r\n\r\nA"), second);
  EXPECT_TRUE(answers.ends_with("\r\n\r\nB"));
}

TEST(SessionTest, IgnoresOneEmptyLineBeforeARequestLine) {
  // RFC 9112 §2.2: a client may send a CRLF after a body; one is ignored, a second is not.
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
  Client client(world);
  client.send("\r\nGET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(world.connector.received(0).starts_with("GET /1 HTTP/1.1\r\nHost: h\r\n"));
  EXPECT_TRUE(client.received().starts_with("HTTP/1.1 200 OK\r\n")) << client.received();
  client.send("\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(world.connector.received(0).find("GET /2"), std::string::npos);
  EXPECT_NE(client.received().find("HTTP/1.1 400 Bad Request\r\n"), std::string::npos)
      << client.received();
}

TEST(SessionTest, RefusesWhatItMustWithItsOwnAnswers) {
  json config = world_config();
  config["routes"] =
      json::array({{{"name", "api"}, {"prefix", "/api"}, {"backend", "b"}, {"methods", {"GET"}}}});
  ProxyWorld world(config);
  Client client(world);
  client.send("GET /other HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_NE(client.received().find("HTTP/1.1 404 Not Found"), std::string::npos);
  EXPECT_NE(client.received().find(R"({"error":"no_route"})"), std::string::npos);
  client.send("POST /api HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_NE(client.received().find("HTTP/1.1 405"), std::string::npos);
  EXPECT_NE(client.received().find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_FALSE(client.ended());  // both kept the connection (the small body was consumed)
  client.send("GET /../etc HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_NE(client.received().find("HTTP/1.1 400"), std::string::npos);
  EXPECT_NE(client.received().find("Connection: close"), std::string::npos);
  EXPECT_TRUE(client.ended());
  EXPECT_EQ(world.connector.connects, 0);  // none went upstream
}

TEST(SessionTest, ASlowHeadGets408AtTheHeaderTimeout) {
  json config = world_config();
  config["http"] = {{"header_timeout_ms", 300}};
  ProxyWorld world(config);
  Client client(world);
  client.send("GET / HTTP/1.1\r\nHost:");
  world.advance(299ms);
  EXPECT_EQ(client.received(), "");
  world.advance(1ms);
  EXPECT_TRUE(client.received().starts_with("HTTP/1.1 408")) << client.received();
  EXPECT_TRUE(client.ended());
}

TEST(SessionTest, TheFirstHeadsTimeoutCountsFromTheConnectionNotItsFirstByte) {
  json config = world_config();
  config["http"] = {{"header_timeout_ms", 300}};
  ProxyWorld world(config);
  Client client(world);
  world.run();  // the session starts: the connection is accepted at 0 ms
  world.advance(200ms);
  client.send("GET / HTTP/1.1\r\nHost:");  // a trickle that starts late must not buy more time
  world.advance(99ms);
  EXPECT_EQ(client.received(), "");
  world.advance(1ms);
  EXPECT_TRUE(client.received().starts_with("HTTP/1.1 408")) << client.received();
  EXPECT_TRUE(client.ended());
}

TEST(SessionTest, AnIdleConnectionClosesSilentlyAtTheIdleTimeout) {
  json config = world_config();
  config["http"] = {{"idle_timeout_ms", 500}};
  ProxyWorld world(config);
  world.connector.responses.emplace_back(kOk);
  Client client(world);
  client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  const std::string answered = client.received();
  world.advance(499ms);
  EXPECT_FALSE(client.ended());
  world.advance(1ms);
  EXPECT_TRUE(client.ended());
  EXPECT_EQ(client.received(), answered);  // nothing more was written
}

TEST(SessionTest, AnUpstreamThatNeverAnswersIs504AtItsTimeout) {
  ProxyWorld world(world_config());            // timeout_ms 1000
  world.connector.responses.emplace_back("");  // connected, silent
  Client client(world);
  client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  world.advance(999ms);
  EXPECT_EQ(client.received(), "");
  world.advance(1ms);
  EXPECT_TRUE(client.received().starts_with("HTTP/1.1 504")) << client.received();
  EXPECT_NE(client.received().find("upstream_timeout"), std::string::npos);
  EXPECT_FALSE(client.ended());  // a gateway error keeps a healthy client connection
}

TEST(SessionTest, AnUpstreamThatClosesBeforeAnsweringIs502) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("");
  Client client(world);
  client.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx");
  world.connector.peers.at(0)->close();
  world.run();
  EXPECT_TRUE(client.received().starts_with("HTTP/1.1 502")) << client.received();
  EXPECT_NE(client.received().find("upstream_reset"), std::string::npos);
}

TEST(SessionTest, ARefusedConnectionTriesTheOtherEndpointThenAnswers502) {
  ProxyWorld world(world_config({"10.0.0.1:80", "10.0.0.2:80"}));
  world.connector.refused = {"10.0.0.1:80", "10.0.0.2:80"};
  Client client(world);
  client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(world.connector.connects, 2);
  EXPECT_TRUE(client.received().starts_with("HTTP/1.1 502")) << client.received();
  EXPECT_NE(client.received().find("upstream_connect_error"), std::string::npos);
}

TEST(SessionTest, StreamsAChunkedRequestAndAnEofDelimitedResponse) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nhello ");
  Client client(world);
  client.send("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  client.send("2\r\nde\r\n0\r\n\r\n");
  auto& upstream = *world.connector.peers.at(0);
  const std::string seen = world.connector.received(0);
  EXPECT_NE(seen.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_TRUE(seen.ends_with("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")) << seen;
  boost::asio::write(upstream, boost::asio::buffer(std::string_view("world")));
  upstream.close();  // the upstream ends the body by closing
  world.run();
  const std::string answer = client.received();
  EXPECT_NE(answer.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << answer;
  EXPECT_TRUE(answer.ends_with("6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n")) << answer;
  EXPECT_FALSE(client.ended());  // re-chunked: the client connection survives
}

TEST(SessionTest, ARateLimitedRequestNeverGoesUpstream) {
  json config = world_config();
  config["limits"] = {{"p", {{"requests", 1}, {"window_ms", 60000}, {"buckets", 60}}}};
  config["routes"][0]["limit"] = "p";
  ProxyWorld world(config);
  world.connector.responses.emplace_back(kOk);
  Client client(world);
  client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_NE(client.received().find("RateLimit: \"p\";r=0;t=60\r\n"), std::string::npos)
      << client.received();
  client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  const std::string answer = client.received();
  EXPECT_NE(answer.find("HTTP/1.1 429"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Retry-After: "), std::string::npos);
  EXPECT_NE(answer.find(R"("error":"rate_limited","policy":"p")"), std::string::npos);
  EXPECT_EQ(world.connector.received(0).find("GET / HTTP/1.1", 5), std::string::npos);
}

}  // namespace
}  // namespace sluice::proxy
