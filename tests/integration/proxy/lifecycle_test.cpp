// SPDX-License-Identifier: Apache-2.0
// The process lifecycle: readiness, graceful drain, SIGHUP reload, max_connections.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <string>
#include <string_view>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class LifecycleTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  /// Waits until `gateway` has exactly `n` connections to backend "demo" in use by a request,
  /// as its metrics say.
  static ::testing::AssertionResult active_upstream(const SluiceProcess& gateway, int n) {
    return wait_until(std::to_string(n) + " active upstream connection(s)", [&] {
      return scrape_metrics(gateway).value("sluice_upstream_connections",
                                           {{"backend", "demo"}, {"state", "active"}}) == n;
    });
  }

  /// Sends `request` on `client` once no request is in flight upstream, then waits until one
  /// is: that one is `request`. (A connection still counts as active for a moment after its
  /// response reached the client, so waiting for 1 alone could see the previous request.)
  static ::testing::AssertionResult send_until_in_flight(const SluiceProcess& gateway,
                                                         HttpClient& client,
                                                         std::string_view request) {
    if (auto none = active_upstream(gateway, 0); !none) {
      return none;
    }
    client.send_raw(request);
    return active_upstream(gateway, 1);
  }
};

TEST_F(LifecycleTest, AdminAnswersHealthAndReadiness) {
  SluiceProcess gateway(config);
  HttpClient admin(gateway.admin_port());
  EXPECT_EQ(admin.get("/healthz").result_int(), 200);
  EXPECT_EQ(admin.get("/readyz").result_int(), 200);
  EXPECT_EQ(admin.get("/nope").result_int(), 404);
  EXPECT_EQ(admin.request(http::verb::post, "/healthz").result_int(), 405);
}

TEST_F(LifecycleTest, DrainLetsInFlightRequestsFinishThenExitsZero) {
  config["drain_timeout_ms"] = 5000;
  SluiceProcess gateway(config);
  HttpClient admin(gateway.admin_port());
  HttpClient busy(gateway.proxy_port());
  HttpClient idle(gateway.proxy_port());
  ASSERT_EQ(idle.get("/ok").result_int(), 200);
  ASSERT_TRUE(send_until_in_flight(gateway, busy, "GET /slow/800 HTTP/1.1\r\nHost: a\r\n\r\n"));
  const auto started = Clock::now();
  ASSERT_TRUE(gateway.process().send_signal(SIGTERM));
  ASSERT_TRUE(gateway.process().wait_for_line("draining"));

  EXPECT_EQ(admin.get("/readyz").result_int(), 503);
  EXPECT_EQ(admin.get("/healthz").result_int(), 200);
  EXPECT_TRUE(idle.closed_by_peer(milliseconds(2000)));  // idle keep-alive closed at once
  const auto res = busy.read_response();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200);  // the in-flight request finished
  EXPECT_FALSE(res->keep_alive());    // ...and was told the connection ends
  EXPECT_EQ(gateway.process().wait_exit(), 0) << gateway.process().output();
  EXPECT_LT(Clock::now() - started, milliseconds(4000));
  EXPECT_NE(HttpClient::probe_connect(gateway.proxy_port(), milliseconds(500)),
            boost::system::error_code{});
}

TEST_F(LifecycleTest, DrainTimeoutCutsRequestsThatDoNotFinish) {
  config["drain_timeout_ms"] = 300;
  SluiceProcess gateway(config);
  HttpClient busy(gateway.proxy_port());
  ASSERT_TRUE(send_until_in_flight(gateway, busy, "GET /slow/10000 HTTP/1.1\r\nHost: a\r\n\r\n"));
  const auto started = Clock::now();
  ASSERT_TRUE(gateway.process().send_signal(SIGTERM));
  EXPECT_EQ(gateway.process().wait_exit(), 0) << gateway.process().output();
  EXPECT_LT(Clock::now() - started, milliseconds(3000));
  EXPECT_TRUE(busy.closed_by_peer(milliseconds(1000)));
}

TEST_F(LifecycleTest, SighupSwapsRoutesAndBackendsAtomically) {
  DemoBackend next;
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  ASSERT_EQ(client.get("/ok")["X-Backend-Port"], std::to_string(backend.port()));
  // A request in flight on the old snapshot finishes there.
  HttpClient busy(gateway.proxy_port());
  ASSERT_TRUE(send_until_in_flight(gateway, busy, "GET /slow/600 HTTP/1.1\r\nHost: a\r\n\r\n"));

  json changed = config;
  changed["backends"]["next"] = {{"endpoints", {next.endpoint()}}};
  changed["routes"] = json::array({{{"name", "moved"}, {"prefix", "/"}, {"backend", "next"}}});
  const std::size_t mark = gateway.process().line_count();
  gateway.rewrite_config(changed);
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark, "reload ok"))
      << gateway.process().output();
  EXPECT_EQ(client.get("/ok")["X-Backend-Port"], std::to_string(next.port()));
  const auto old = busy.read_response();
  ASSERT_TRUE(old);
  EXPECT_EQ(old->result_int(), 200);
  EXPECT_EQ((*old)["X-Backend-Port"], std::to_string(backend.port()));
}

TEST_F(LifecycleTest, SighupWithAnInvalidFileKeepsTheOldConfigAndLogsEveryProblem) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  json broken = config;
  broken["routes"][0]["backend"] = "missing";
  broken["threads"] = "many";
  const std::size_t mark = gateway.process().line_count();
  gateway.rewrite_config(broken);
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark, "reload failed"));
  EXPECT_TRUE(gateway.process().wait_for_line_after(mark, "routes[0].backend"));
  EXPECT_TRUE(gateway.process().wait_for_line_after(mark, "threads"));
  EXPECT_EQ(client.get("/ok").result_int(), 200);  // still serving on the old config
  // Not JSON at all: same.
  {
    std::ofstream out(gateway.config_path(), std::ios::trunc);
    out << "{ not json";
  }
  const std::size_t mark2 = gateway.process().line_count();
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark2, "reload failed"));
  EXPECT_EQ(client.get("/ok").result_int(), 200);
}

TEST_F(LifecycleTest, MaxConnectionsHoldsFurtherClientsUntilOneLeaves) {
  config["threads"] = 1;
  config["http"] = {{"max_connections", 2}};
  SluiceProcess gateway(config);
  HttpClient first(gateway.proxy_port());
  HttpClient second(gateway.proxy_port());
  ASSERT_EQ(first.get("/ok").result_int(), 200);
  ASSERT_EQ(second.get("/ok").result_int(), 200);
  HttpClient third(gateway.proxy_port());  // the kernel completes the handshake...
  third.send_raw("GET /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_FALSE(third.read_response(milliseconds(400)).has_value());  // ...but nobody serves it
  first.close();
  HttpClient fourth(gateway.proxy_port());
  fourth.send_raw("GET /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto res = fourth.read_response();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200);
}

}  // namespace
}  // namespace sluice::testing
