// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/upstream/upstream_pool.hpp"

#include <gtest/gtest.h>

#include <memory_resource>

#include "tests/support/manual_clock.hpp"
#include "tests/support/test_stream_ops.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;
using testing::TestStream;
using Connection = UpstreamConnection<TestStream>;

class UpstreamPoolTest : public ::testing::Test {
 protected:
  /// A new connection to a remote end the test keeps.
  ConnectionPtr<TestStream> connection() {
    auto c = std::make_shared<Connection>(ioc_.get_executor());
    remotes_.push_back(std::make_unique<TestStream>(ioc_.get_executor()));
    c->stream.connect(*remotes_.back());
    c->mark_active(metrics_);
    return c;
  }
  void run() {
    ioc_.restart();
    ioc_.poll();
  }

  testing::ManualClock clock_;
  boost::asio::io_context ioc_{1};
  std::pmr::unsynchronized_pool_resource ops_;
  UpstreamPool<TestStream> pool_{clock_, 30s, &ops_};
  metrics::BackendMetrics metrics_;
  std::vector<std::unique_ptr<TestStream>> remotes_;
};

TEST_F(UpstreamPoolTest, HandsBackTheMostRecentlyUsedConnectionFirst) {
  auto a = connection();
  auto b = connection();
  const auto* first = a.get();
  const auto* second = b.get();
  pool_.checkin("e", std::move(a), 8);
  pool_.checkin("e", std::move(b), 8);
  EXPECT_EQ(pool_.idle(), 2U);
  EXPECT_EQ(metrics_.connections->idle.load(), 2);
  EXPECT_EQ(metrics_.connections->active.load(), 0);
  EXPECT_EQ(pool_.checkout("e").get(), second);
  EXPECT_EQ(pool_.checkout("e").get(), first);
  EXPECT_EQ(pool_.checkout("e"), nullptr);
  EXPECT_EQ(pool_.checkout("other"), nullptr);
}

TEST_F(UpstreamPoolTest, AConnectionServesOnlyTheTlsSettingsItWasOpenedWith) {
  config::BackendTlsConfig settings;
  std::string error;
  const auto old_tls = tls::ClientTls::load(settings, "backends.b.tls", error);
  const auto new_tls = tls::ClientTls::load(settings, "backends.b.tls", error);  // re-read
  ASSERT_TRUE(old_tls && new_tls) << error;
  auto plain = connection();
  auto secure = connection();
  secure->tls = old_tls.get();
  const auto* secure_ptr = secure.get();
  pool_.checkin("e", std::move(plain), 8);
  pool_.checkin("e", std::move(secure), 8);
  EXPECT_EQ(pool_.checkout("e", old_tls.get()).get(), secure_ptr);
  pool_.checkin("e", connection(), 8);  // plain again, on top
  auto reused = connection();
  reused->tls = old_tls.get();
  pool_.checkin("e", std::move(reused), 8);
  // After a reload the endpoint's settings are new ones: nothing pooled matches (and the
  // mismatched connections are closed on the way).
  EXPECT_EQ(pool_.checkout("e", new_tls.get()), nullptr);
  EXPECT_EQ(pool_.idle(), 0U);
}

TEST_F(UpstreamPoolTest, KeepsAtMostMaxIdlePerEndpoint) {
  pool_.checkin("e", connection(), 1);
  pool_.checkin("e", connection(), 1);
  pool_.checkin("e", connection(), 0);
  EXPECT_EQ(pool_.idle(), 1U);
}

TEST_F(UpstreamPoolTest, ForgetsConnectionsIdleTooLong) {
  pool_.checkin("e", connection(), 8);
  clock_.advance(30s - 1ns);
  auto c = pool_.checkout("e");
  ASSERT_NE(c, nullptr);
  pool_.checkin("e", std::move(c), 8);
  clock_.advance(30s);
  EXPECT_EQ(pool_.checkout("e"), nullptr);
}

TEST_F(UpstreamPoolTest, AConnectionTheUpstreamClosedOrWroteToIsNotHandedOut) {
  pool_.checkin("closed", connection(), 8);
  pool_.checkin("chatty", connection(), 8);
  remotes_[0]->close();  // the upstream ended its idle connection
  boost::asio::write(*remotes_[1], boost::asio::buffer(std::string_view("HTTP/1.1 200 OK\r\n")));
  run();  // the watching reads see both
  EXPECT_EQ(pool_.checkout("closed"), nullptr);
  EXPECT_EQ(pool_.checkout("chatty"), nullptr);
  EXPECT_EQ(pool_.idle(), 0U);
}

TEST_F(UpstreamPoolTest, SweepClosesStaleOnesAndThoseOfRemovedEndpoints) {
  pool_.checkin("kept", connection(), 8);
  pool_.checkin("removed", connection(), 8);
  pool_.checkin("kept", connection(), 8);
  remotes_[2]->close();
  run();
  EXPECT_EQ(pool_.sweep([](std::string_view e) { return e == "kept"; }), 2U);
  EXPECT_EQ(pool_.idle(), 1U);
  EXPECT_NE(pool_.checkout("kept"), nullptr);
}

TEST_F(UpstreamPoolTest, TheWatchingReadReceivesTheNextResponse) {
  pool_.checkin("e", connection(), 8);
  auto c = pool_.checkout("e");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->intact());  // its read is pending
  boost::asio::write(*remotes_[0], boost::asio::buffer(std::string_view("abc")));
  boost::system::error_code got_ec = boost::asio::error::would_block;
  std::size_t got_n = 0;
  c->async_receive([&](boost::system::error_code ec, std::size_t n) {
    got_ec = ec;
    got_n = n;
  });
  run();
  EXPECT_FALSE(got_ec);
  EXPECT_EQ(got_n, 3U);
  EXPECT_EQ(c->buffer.size(), 3U);  // already in the connection's buffer
}

TEST_F(UpstreamPoolTest, ClearClosesEverything) {
  pool_.checkin("a", connection(), 8);
  pool_.checkin("b", connection(), 8);
  pool_.clear();
  EXPECT_EQ(pool_.idle(), 0U);
  EXPECT_EQ(pool_.checkout("a"), nullptr);
}

// Two backends may share an endpoint: a reload that removes one keeps its pooled connections
// (the endpoint is still in use) and later frees the removed backend's metrics. The connection
// must not count into freed memory when the other backend checks it out (ASan caught this).
TEST_F(UpstreamPoolTest, AConnectionOfARetiredBackendCountsForTheBackendThatReusesIt) {
  auto retired = std::make_unique<metrics::BackendMetrics>();
  const std::weak_ptr<metrics::ConnectionCounts> retired_counts = retired->connections;
  auto c = connection();
  c->mark_active(*retired);
  pool_.checkin("shared:80", std::move(c), 8);
  EXPECT_EQ(retired_counts.lock()->idle.load(), 1);
  retired.reset();  // the backend's series are gone; the pooled connection still counts in them
  EXPECT_FALSE(retired_counts.expired());

  auto reused = pool_.checkout("shared:80");
  ASSERT_NE(reused, nullptr);
  reused->mark_active(metrics_);
  EXPECT_TRUE(retired_counts.expired());  // the last holder left
  EXPECT_EQ(metrics_.connections->active.load(), 1);
  StreamOps<TestStream>::close(reused->stream);
  reused.reset();
  run();  // the watching read ends aborted, and the connection with it
  EXPECT_EQ(metrics_.connections->active.load(), 0);
}

}  // namespace
}  // namespace sluice::proxy
