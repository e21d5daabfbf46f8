// SPDX-License-Identifier: Apache-2.0
// The exchange alone: a prepared request context, an in-memory client stream and a scripted
// upstream (tests/support/proxy_world.hpp). Then fault injection: Beast's fail_count makes the
// Nth read or write on either side fail, for every N until the exchange succeeds, and every
// outcome must stay consistent (nothing hangs, the outcome table and what reached the client
// agree, the breaker window counts the request exactly when it went upstream).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>

#include "tests/support/proxy_world.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;
using testing::ProxyWorld;
using testing::TestStream;
using testing::world_config;
namespace http = boost::beast::http;

/// One exchange: the request in the client's read buffer, judged like the session does.
class OneExchange {
 public:
  OneExchange(ProxyWorld& world, std::string_view request,
              boost::beast::test::fail_count* fail = nullptr)
      : world_(world),
        lease_(world.contexts.acquire()),
        down_(fail != nullptr ? TestStream(world.ioc, *fail)
                              : TestStream(world.ioc.get_executor())),
        client_(world.ioc.get_executor()),
        read_deadline_(world.sweep, &detail::cancel_stream<TestStream>, &down_),
        write_deadline_(world.sweep, &detail::cancel_stream<TestStream>, &down_) {
    client_.connect(down_);
    RequestContext& ctx = *lease_;
    ctx.reset(world.clock.now(), world.snapshot());
    const auto b = buffer_.prepare(request.size());
    std::memcpy(b.data(), request.data(), request.size());
    buffer_.commit(request.size());
    std::size_t scanned = 0;
    const std::size_t end = http1::find_head_end(buffered(buffer_), scanned);
    EXPECT_NE(end, 0U);
    EXPECT_FALSE(parse_head(ctx, buffered(buffer_).substr(0, end)));
    bool await_store = false;
    EXPECT_FALSE(judge(ctx, world.env, peer_, await_store));
  }

  /// Runs the exchange until it is over (or stuck, waiting for something the test must do).
  void start() {
    boost::asio::co_spawn(
        world_.ioc,
        exchange(*lease_,
                 Downstream<TestStream>{down_, buffer_, read_deadline_, write_deadline_, peer_},
                 world_.upstream),
        [this](const std::exception_ptr& e) {
          done_ = true;
          escaped_ = static_cast<bool>(e);
        });
    world_.run();
  }
  /// The record step, as the session runs it after the exchange.
  void record() { record_step(*lease_, world_.clock.now(), peer_, nullptr); }

  [[nodiscard]] RequestContext& ctx() { return *lease_; }
  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] bool escaped() const { return escaped_; }
  [[nodiscard]] std::string received() const { return std::string(client_.str()); }
  /// More of the request body, from the client.
  void send(std::string_view bytes) {
    boost::asio::write(client_, boost::asio::buffer(bytes.data(), bytes.size()));
    world_.run();
  }

 private:
  ProxyWorld& world_;
  ContextPool::Lease lease_;
  TestStream down_;
  TestStream client_;
  boost::beast::flat_buffer buffer_;
  Deadline read_deadline_;
  Deadline write_deadline_;
  Peer peer_{boost::asio::ip::make_address("192.0.2.9"), "192.0.2.9"};
  bool done_ = false;
  bool escaped_ = false;
};

/// The response the client got, parsed (nullopt when it is not one whole response).
std::optional<http::response<http::string_body>> parsed_response(const std::string& bytes) {
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(bytes), ec);
  if (ec || !parser.is_done()) {
    return std::nullopt;
  }
  return parser.release();
}

TEST(ExchangeTest, RelaysAResponseAndPoolsTheConnection) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 203 Fine\r\nContent-Length: 3\r\n\r\nabc");
  OneExchange x(world, "GET /p HTTP/1.1\r\nHost: h\r\n\r\n");
  x.start();
  ASSERT_TRUE(x.done());
  const auto res = parsed_response(x.received());
  ASSERT_TRUE(res) << x.received();
  EXPECT_EQ(res->result_int(), 203);
  EXPECT_EQ(res->body(), "abc");
  const ExchangeOutcome& o = x.ctx().outcome;
  EXPECT_EQ(o.status, 203U);
  EXPECT_EQ(o.upstream, UpstreamResult::kResponse);
  EXPECT_EQ(o.upstream_status, 203U);
  EXPECT_EQ(o.bytes_out, 3U);
  EXPECT_TRUE(o.answer_complete);
  ASSERT_TRUE(o.upstream_time);
  EXPECT_EQ(world.pool.idle(), 1U);
  x.record();
  EXPECT_EQ(world.breakers().find("b")->snapshot().requests, 1U);
  EXPECT_EQ(world.breakers().find("b")->snapshot().accepts, 1U);
}

TEST(ExchangeTest, AFailureStatusIsAFailureInTheBreakerWindow) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n");
  OneExchange x(world, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  x.start();
  EXPECT_EQ(x.ctx().outcome.status, 503U);
  x.record();
  EXPECT_EQ(world.breakers().find("b")->snapshot().requests, 1U);
  EXPECT_EQ(world.breakers().find("b")->snapshot().accepts, 0U);
}

TEST(ExchangeTest, ARequestThatNeverReachedTheUpstreamLeavesTheWindowAlone) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("");  // connected; it would answer once asked
  // The client's chunked body turns out malformed before any of it went up: the upstream saw
  // nothing, so the breaker window must not count the request.
  OneExchange x(world, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
  x.start();
  EXPECT_FALSE(x.done());  // streaming: waiting for the body
  x.send("zz\r\n");        // a bad chunk size
  ASSERT_TRUE(x.done());
  EXPECT_TRUE(x.received().starts_with("HTTP/1.1 400")) << x.received();
  x.record();
  EXPECT_EQ(x.ctx().outcome.upstream, UpstreamResult::kNotSent);
  EXPECT_EQ(world.breakers().find("b")->snapshot().requests, 0U);
}

TEST(ExchangeTest, RetriesAnIdempotentRequestOnceWhenAPooledConnectionTurnsOutClosed) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1");
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2");
  {
    OneExchange first(world, "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n");
    first.start();
    first.record();
  }
  ASSERT_EQ(world.pool.idle(), 1U);
  OneExchange second(world, "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n");
  second.start();  // sent on the pooled connection; the upstream then closes it unanswered
  world.connector.peers.at(0)->close();
  world.run();
  ASSERT_TRUE(second.done());
  EXPECT_EQ(world.connector.connects, 2);
  EXPECT_TRUE(second.received().ends_with("\r\n\r\n2")) << second.received();
}

TEST(ExchangeTest, AnswersExpectContinueOnceTheUpstreamIsReady) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("");
  OneExchange x(world,
                "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  x.start();
  EXPECT_EQ(x.received(), "HTTP/1.1 100 Continue\r\n\r\n");
  x.send("hi");
  boost::asio::write(
      *world.connector.peers.at(0),
      boost::asio::buffer(std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")));
  world.run();
  ASSERT_TRUE(x.done());
  EXPECT_NE(x.received().find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(world.connector.received(0).find("Expect"), std::string::npos);
  EXPECT_TRUE(world.connector.received(0).ends_with("\r\n\r\nhi"));
}

TEST(ExchangeTest, ResponseBodiesLargerThanOneReadStream) {
  ProxyWorld world(world_config());
  const std::string body(200000, 'z');
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n" +
                                         body);
  OneExchange x(world, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  x.start();
  ASSERT_TRUE(x.done());
  const auto res = parsed_response(x.received());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), body);
  EXPECT_EQ(x.ctx().outcome.bytes_out, body.size());
}

/// Every read and write of the exchange, on the client's side and the upstream's, failed in
/// turn: whatever fails, the exchange ends, and its outcome is consistent.
constexpr std::string_view kUpgradeRequest =
    "GET /chat HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: echo/1\r\n\r\n";
constexpr std::string_view kSwitching =
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\nConnection: Upgrade\r\n\r\n";

TEST(ExchangeTest, A101ToAnUpgradeTunnelsBytesBothWaysUntilASideCloses) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back(std::string(kSwitching) + "first-from-upstream");
  OneExchange x(world, std::string(kUpgradeRequest) + "early-from-client");
  x.start();
  ASSERT_FALSE(x.done()) << "the tunnel closed at once: " << x.received();
  EXPECT_EQ(world.services.tunnels.load(), 1);
  const std::string to_client = x.received();  // (with the request id the gateway made)
  EXPECT_TRUE(to_client.starts_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo/1\r\n"))
      << to_client;
  EXPECT_TRUE(to_client.ends_with("\r\nConnection: Upgrade\r\n\r\nfirst-from-upstream"))
      << to_client;
  const std::string up = world.connector.received(0);
  EXPECT_NE(up.find("\r\nUpgrade: echo/1\r\n"), std::string::npos) << up;
  EXPECT_NE(up.find("\r\nConnection: Upgrade\r\n\r\nearly-from-client"), std::string::npos) << up;
  // The breaker saw the 101 as an accept the moment the tunnel opened.
  EXPECT_EQ(world.breakers().find("b")->snapshot().accepts, 1U);
  x.send("more");
  EXPECT_NE(world.connector.received(0).find("early-from-clientmore"), std::string::npos);
  boost::asio::write(*world.connector.peers.at(0), boost::asio::buffer(std::string("reply")));
  world.run();
  EXPECT_TRUE(x.received().ends_with("first-from-upstreamreply")) << x.received();
  world.connector.peers.at(0)->close();  // the upstream ends: so does the client's side
  world.run();
  ASSERT_TRUE(x.done());
  EXPECT_FALSE(x.escaped());
  EXPECT_EQ(world.services.tunnels.load(), 0);
  const ExchangeOutcome& o = x.ctx().outcome;
  EXPECT_EQ(o.status, 101U);
  EXPECT_TRUE(o.tunnel_since);
  EXPECT_EQ(o.bytes_in, std::string("early-from-clientmore").size());
  EXPECT_EQ(o.bytes_out, std::string("first-from-upstreamreply").size());
  EXPECT_FALSE(x.ctx().keep_alive);
  EXPECT_EQ(world.pool.idle(), 0U);  // a tunnel's connection is never pooled
  x.record();
  EXPECT_EQ(world.breakers().find("b")->snapshot().requests, 1U);  // counted once
}

TEST(ExchangeTest, AnIdleTunnelEndsAtTunnelIdleTimeout) {
  auto config = world_config();
  config["http"] = {{"tunnel_idle_timeout_ms", 1000}};
  ProxyWorld world(config);
  world.connector.responses.emplace_back(std::string(kSwitching));
  OneExchange x(world, kUpgradeRequest);
  x.start();
  ASSERT_FALSE(x.done());
  world.advance(std::chrono::milliseconds(700));
  x.send("keeps it open");
  world.advance(std::chrono::milliseconds(700));
  EXPECT_FALSE(x.done()) << "closed although bytes moved 700 ms ago";
  world.advance(std::chrono::milliseconds(700));
  EXPECT_TRUE(x.done());
  EXPECT_EQ(world.services.tunnels.load(), 0);
}

TEST(ExchangeTest, AnUpgradeAnsweredOtherwiseIsAnOrdinaryResponse) {
  ProxyWorld world(world_config());
  world.connector.responses.emplace_back("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno");
  OneExchange x(world, kUpgradeRequest);
  x.start();
  ASSERT_TRUE(x.done());
  EXPECT_EQ(x.ctx().outcome.status, 200U);
  EXPECT_TRUE(x.ctx().keep_alive);
  EXPECT_FALSE(x.ctx().outcome.tunnel_since);
  EXPECT_EQ(world.services.tunnels.load(), 0);
}

TEST(ExchangeTest, A101NobodyAskedForIsABadGateway) {
  auto config = world_config();
  config["routes"][0]["upgrades"] = false;  // Upgrade is stripped: a 101 is nonsense
  ProxyWorld world(config);
  world.connector.responses.emplace_back(std::string(kSwitching));
  OneExchange x(world, kUpgradeRequest);
  x.start();
  ASSERT_TRUE(x.done());
  EXPECT_EQ(x.ctx().outcome.status, 502U);
  EXPECT_EQ(world.connector.received(0).find("Upgrade"), std::string::npos);
}

TEST(ExchangeTest, EverySingleFailureEndsConsistently) {
  const std::string request =
      "POST /f HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n";
  const std::string response =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
  bool succeeded = false;
  std::size_t n = 0;
  for (; n < 100 && !succeeded; ++n) {
    SCOPED_TRACE("failing operation " + std::to_string(n));
    ProxyWorld world(world_config());
    world.connector.responses.emplace_back("");  // it answers once the request is out
    boost::beast::test::fail_count fail(n);
    world.connector.fail = &fail;
    OneExchange x(world, request, &fail);
    x.start();
    if (!world.connector.peers.empty() && !x.done()) {
      boost::system::error_code ignored;  // (the gateway may have closed it already)
      boost::asio::write(*world.connector.peers.at(0), boost::asio::buffer(response), ignored);
      world.run();
    }
    world.advance(2s);  // past every timeout: a stuck exchange would still be running
    ASSERT_TRUE(x.done());
    EXPECT_FALSE(x.escaped());
    x.record();
    const ExchangeOutcome& o = x.ctx().outcome;
    const auto window = world.breakers().find("b")->snapshot();
    const OutcomeRow row = classify(o.upstream, false);
    EXPECT_EQ(window.requests, row.breaker == BreakerRecord::kNothing ? 0U : 1U);
    if (o.upstream == UpstreamResult::kResponse) {
      EXPECT_EQ(o.upstream_status, 200U);
    }
    const auto res = parsed_response(x.received());
    if (o.answer_complete) {
      ASSERT_TRUE(res) << x.received();
      EXPECT_EQ(res->result_int(), o.status);
    }
    succeeded = o.answer_complete && o.status == 200 && res && res->body() == "hello";
  }
  EXPECT_TRUE(succeeded);  // with no failure left to inject, the exchange went through
  // ... after a failure at each of its operations: the request's write up, the response's read,
  // the write down, and the read that watches the pooled connection.
  EXPECT_GE(n, 4U);
}

/// The same with a streamed response body read a piece at a time: the relay's loop fails at
/// each of its reads and writes in turn.
TEST(ExchangeTest, EverySingleFailureWhileStreamingEndsConsistently) {
  const std::string body(20000, 'q');
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n" + body;
  bool succeeded = false;
  std::size_t n = 0;
  for (; n < 200 && !succeeded; ++n) {
    SCOPED_TRACE("failing operation " + std::to_string(n));
    ProxyWorld world(world_config());
    world.connector.responses.emplace_back("");
    world.connector.read_size = 4096;
    boost::beast::test::fail_count fail(n);
    world.connector.fail = &fail;
    OneExchange x(world, "GET /big HTTP/1.1\r\nHost: h\r\n\r\n", &fail);
    x.start();
    if (!world.connector.peers.empty() && !x.done()) {
      boost::system::error_code ignored;
      boost::asio::write(*world.connector.peers.at(0), boost::asio::buffer(response), ignored);
      world.run();
    }
    world.advance(2s);
    ASSERT_TRUE(x.done());
    x.record();
    const ExchangeOutcome& o = x.ctx().outcome;
    const auto res = parsed_response(x.received());
    if (o.answer_complete) {
      ASSERT_TRUE(res);
      EXPECT_EQ(res->body(), body);
      EXPECT_EQ(o.bytes_out, body.size());
    } else if (o.status != 0) {
      EXPECT_FALSE(res && res->body() == body);  // cut: the client must not take it as whole
    }
    EXPECT_EQ(world.breakers().find("b")->snapshot().requests,
              classify(o.upstream, false).breaker == BreakerRecord::kNothing ? 0U : 1U);
    succeeded = o.answer_complete;
  }
  EXPECT_TRUE(succeeded);
  EXPECT_GE(n, 6U);  // several reads of the body, each failed once
}

}  // namespace
}  // namespace sluice::proxy
