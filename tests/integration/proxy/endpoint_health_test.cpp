// SPDX-License-Identifier: Apache-2.0
// Endpoint health through the real binary with real demo backends made sick on purpose
// (docs/endpoint-health.md): active checks take an endpoint out and bring it back at their
// thresholds, a killed endpoint stops getting traffic, outlier ejection and its cap, panic mode,
// and draining from the admin API with in-flight requests finishing.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <future>
#include <map>
#include <set>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/admin_client.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/sanitized.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kIntervalMs = 200;
/// unhealthy_threshold (2) × interval, with jitter (+10%), one check already under way and the
/// scheduler's slack; sanitized binaries run a few times slower.
constexpr milliseconds kStateChangeBound =
    milliseconds(3 * kIntervalMs * 11 / 10 + 150) * (kSanitized ? 3 : 1);

/// Backend "demo" over `backends`, with the breaker off (these tests are about endpoints).
json endpoints_config(const std::vector<const DemoBackend*>& backends) {
  std::vector<std::string> endpoints;
  for (const auto* b : backends) {
    endpoints.push_back(b->endpoint());
  }
  json c = minimal_gateway_config(endpoints);
  c["backends"]["demo"]["breaker"] = {{"enabled", false}};
  return c;
}

json health_check() {
  return {{"path", "/healthz"},     {"interval_ms", kIntervalMs}, {"timeout_ms", 150},
          {"healthy_threshold", 2}, {"unhealthy_threshold", 2},   {"expected_statuses", {200}}};
}

/// The state of `endpoint` in GET /admin/backends/demo/endpoints.
std::string state_of(AdminClient& admin, const std::string& endpoint) {
  const auto reply = admin.get("/admin/backends/demo/endpoints");
  for (const auto& e : reply.body.at("endpoints")) {
    if (e.at("endpoint") == endpoint) {
      return e.at("state").get<std::string>();
    }
  }
  return "missing";
}

/// How many of `n` GETs of /ok each backend port answered (0: not a 200).
std::map<std::string, int> spread(HttpClient& client, int n) {
  std::map<std::string, int> by_port;
  for (int i = 0; i < n; ++i) {
    const Response res = client.get("/ok");
    ++by_port[res.result_int() == 200 ? std::string(res["X-Backend-Port"]) : "error"];
  }
  return by_port;
}

std::string port_of(const DemoBackend& b) {
  return std::to_string(b.port());
}

class EndpointHealthTest : public ::testing::Test {
 protected:
  std::array<DemoBackend, 3> backends_;
};

TEST_F(EndpointHealthTest, AFailingCheckTakesAnEndpointOutAndPassingOnesBringItBack) {
  json c = endpoints_config({&backends_[0], &backends_[1], &backends_[2]});
  c["backends"]["demo"]["health_check"] = health_check();
  SluiceProcess gateway(c);
  AdminClient admin(gateway.admin_port());
  HttpClient client(gateway.proxy_port());
  const std::string sick = backends_[1].endpoint();
  ASSERT_TRUE(wait_until("the first checks", [&] { return state_of(admin, sick) == "healthy"; }));

  set_faults(backends_[1], "health=down");
  const auto down_at = Clock::now();
  ASSERT_TRUE(wait_until("the endpoint is unhealthy",
                         [&] { return state_of(admin, sick) == "unhealthy"; }));
  const auto out_after = Clock::now() - down_at;
  EXPECT_LT(out_after, kStateChangeBound) << "took too long";
  const auto traffic = spread(client, 60);
  EXPECT_FALSE(traffic.contains(port_of(backends_[1])));
  EXPECT_EQ(traffic.at(port_of(backends_[0])), 30);
  EXPECT_EQ(traffic.at(port_of(backends_[2])), 30);
  const Scrape s = scrape_until(gateway, "the gauge", [&](const Scrape& t) {
    return t.value("sluice_endpoint_healthy", {{"backend", "demo"}, {"endpoint", sick}}) == 0;
  });
  EXPECT_EQ(s.value("sluice_endpoint_healthy",
                    {{"backend", "demo"}, {"endpoint", backends_[0].endpoint()}}),
            1);

  set_faults(backends_[1], "health=up");
  const auto up_at = Clock::now();
  ASSERT_TRUE(
      wait_until("the endpoint is back", [&] { return state_of(admin, sick) == "healthy"; }));
  EXPECT_LT(Clock::now() - up_at, kStateChangeBound);
  EXPECT_EQ(spread(client, 30).at(port_of(backends_[1])), 10);
}

TEST_F(EndpointHealthTest, AKilledEndpointStopsGettingTraffic) {
  json c = endpoints_config({&backends_[0], &backends_[1], &backends_[2]});
  c["backends"]["demo"]["health_check"] = health_check();
  SluiceProcess gateway(c);
  AdminClient admin(gateway.admin_port());
  HttpClient client(gateway.proxy_port());
  const std::string killed = backends_[2].endpoint();
  ASSERT_TRUE(backends_[2].stop());
  ASSERT_TRUE(wait_until("the endpoint is unhealthy",
                         [&] { return state_of(admin, killed) == "unhealthy"; }));
  const auto traffic = spread(client, 100);
  EXPECT_FALSE(traffic.contains("error")) << "every request found a live endpoint";
  EXPECT_EQ(traffic.at(port_of(backends_[0])) + traffic.at(port_of(backends_[1])), 100);
}

TEST_F(EndpointHealthTest, AnEndpointTooSlowToAnswerItsCheckInTimeIsTakenOut) {
  json c = endpoints_config({&backends_[0], &backends_[1]});
  c["backends"]["demo"]["health_check"] = health_check();  // timeout_ms 150
  SluiceProcess gateway(c);
  AdminClient admin(gateway.admin_port());
  const std::string slow = backends_[0].endpoint();
  set_faults(backends_[0], "delay_ms=400");
  ASSERT_TRUE(wait_until("the slow endpoint is unhealthy",
                         [&] { return state_of(admin, slow) == "unhealthy"; }));
  // (The log line is written by the logging thread: it may follow the state by a moment.)
  EXPECT_TRUE(wait_until("the log line", [&] {
    return gateway.process().output().find("endpoint unhealthy backend=demo endpoint=" + slow) !=
           std::string::npos;
  })) << gateway.process().output();
  set_faults(backends_[0], "delay_ms=0");
  ASSERT_TRUE(
      wait_until("it is back once fast again", [&] { return state_of(admin, slow) == "healthy"; }));
  EXPECT_TRUE(
      gateway.process().wait_for_line("endpoint healthy again backend=demo endpoint=" + slow));
}

TEST_F(EndpointHealthTest, ConsecutiveFailuresEjectAnEndpointButNeverMoreThanTheCap) {
  json c = endpoints_config({&backends_[0], &backends_[1], &backends_[2]});
  c["backends"]["demo"]["outlier"] = {
      {"consecutive_failures", 3}, {"base_ejection_ms", 60000}, {"max_ejection_percent", 34}};
  SluiceProcess gateway(c);
  AdminClient admin(gateway.admin_port());
  HttpClient client(gateway.proxy_port());
  set_faults(backends_[0], "fail_percent=100&fail_status=503");
  set_faults(backends_[1], "fail_percent=100&fail_status=503");
  // Round robin: 30 requests give each endpoint 10; the first failing one to reach three in a
  // row is ejected, the second stays (one of three is the 34% cap).
  spread(client, 30);
  const std::set<std::string> states = {state_of(admin, backends_[0].endpoint()),
                                        state_of(admin, backends_[1].endpoint())};
  EXPECT_EQ(states, (std::set<std::string>{"ejected", "healthy"}));
  EXPECT_EQ(state_of(admin, backends_[2].endpoint()), "healthy");
  const auto listing = admin.get("/admin/backends/demo/endpoints").body.at("endpoints");
  for (const auto& e : listing) {
    if (e.at("state") == "ejected") {
      EXPECT_GT(e.at("ejected_until_ms").get<std::int64_t>(), 0);
      EXPECT_EQ(e.at("consecutive_failures"), 0) << "the streak starts over once out";
    } else {
      EXPECT_EQ(e.at("ejected_until_ms"), 0);
    }
  }
  const Scrape s = scrape_until(gateway, "one ejection", [&](const Scrape& t) {
    return t.sum("sluice_endpoint_ejections_total") == 1;
  });
  EXPECT_EQ(s.sum("sluice_endpoint_healthy"), 2) << s.text();
}

TEST_F(EndpointHealthTest, WhenNoEndpointIsPickableAllAreUsedAndThatIsCounted) {
  json c = endpoints_config({&backends_[0], &backends_[1]});
  c["backends"]["demo"]["health_check"] = health_check();
  SluiceProcess gateway(c);
  AdminClient admin(gateway.admin_port());
  HttpClient client(gateway.proxy_port());
  set_faults(backends_[0], "health=down");
  set_faults(backends_[1], "health=down");
  ASSERT_TRUE(wait_until("both unhealthy", [&] {
    return state_of(admin, backends_[0].endpoint()) == "unhealthy" &&
           state_of(admin, backends_[1].endpoint()) == "unhealthy";
  }));
  // Their /ok still answers: panic routing sends traffic to both rather than failing it.
  const auto traffic = spread(client, 20);
  EXPECT_EQ(traffic.at(port_of(backends_[0])), 10);
  EXPECT_EQ(traffic.at(port_of(backends_[1])), 10);
  const Scrape s = scrape_until(gateway, "the panic picks", [&](const Scrape& t) {
    return t.value("sluice_endpoint_panic_picks_total", {{"backend", "demo"}}) >= 20;
  });
  EXPECT_EQ(s.sum("sluice_endpoint_healthy"), 0);
}

TEST_F(EndpointHealthTest, DrainingLetsInFlightRequestsFinishAndTakesNoNewOnes) {
  SluiceProcess gateway(endpoints_config({&backends_[0], &backends_[1]}));
  AdminClient admin(gateway.admin_port());
  const std::string drained = backends_[0].endpoint();
  // Round robin per worker thread: keep asking until a slow request lands on backend 0.
  std::future<Response> slow;
  for (int i = 0; i < 8 && !slow.valid(); ++i) {
    auto attempt = std::async(std::launch::async, [&] {
      HttpClient c(gateway.proxy_port());
      return c.get("/slow/1500");
    });
    const bool landed = wait_until(
        "a slow request in flight on backend 0",
        [&] {
          const auto list = admin.get("/admin/backends/demo/endpoints").body.at("endpoints");
          return list.at(0).at("active_requests") == 1;
        },
        milliseconds(500));
    if (landed) {
      slow = std::move(attempt);
    } else {
      attempt.wait();
    }
  }
  ASSERT_TRUE(slow.valid()) << "no slow request reached backend 0";
  const auto reply =
      admin.put("/admin/backends/demo/endpoints/" + drained + "/state", {{"state", "draining"}});
  ASSERT_EQ(reply.status, 200) << reply.body.dump();
  EXPECT_EQ(reply.body.at("endpoints").at(0).at("state"), "draining");
  EXPECT_EQ(reply.body.at("endpoints").at(0).at("active_requests"), 1);

  HttpClient client(gateway.proxy_port());
  const auto traffic = spread(client, 20);
  EXPECT_EQ(traffic.at(port_of(backends_[1])), 20) << "nothing new goes to a draining endpoint";
  const Response finished = slow.get();
  EXPECT_EQ(finished.result_int(), 200) << "the in-flight request finished";
  EXPECT_EQ(finished["X-Backend-Port"], port_of(backends_[0]));

  ASSERT_EQ(admin.put("/admin/backends/demo/endpoints/" + drained + "/state", {{"state", "active"}})
                .status,
            200);
  EXPECT_EQ(spread(client, 20).at(port_of(backends_[0])), 10);
}

TEST_F(EndpointHealthTest, EndpointStateRejectsWhatItCannotApply) {
  SluiceProcess gateway(endpoints_config({&backends_[0]}));
  AdminClient admin(gateway.admin_port());
  const std::string base = "/admin/backends/demo/endpoints/";
  auto r = admin.put(base + backends_[0].endpoint() + "/state", {{"state", "sleeping"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.at("field"),
            "backends.demo.endpoints[\"" + backends_[0].endpoint() + "\"].state")
      << r.body.dump();
  EXPECT_EQ(admin.put(base + "127.0.0.1:1/state", {{"state", "draining"}}).status, 404);
  EXPECT_EQ(admin.put("/admin/backends/none/endpoints/x:1/state", {{"state", "draining"}}).status,
            404);
  EXPECT_EQ(admin.get(base + backends_[0].endpoint() + "/state").status, 405);
  EXPECT_EQ(admin.get("/admin/backends/none/endpoints").status, 404);
}

}  // namespace
}  // namespace sluice::testing
