// SPDX-License-Identifier: Apache-2.0
// Each step of the request path on its own: identify, limit, breaker, record.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gateway/log/user_hash.hpp"
#include "gateway/proxy/session/request_intake.hpp"
#include "gateway/proxy/steps/breaker_step.hpp"
#include "gateway/proxy/steps/identify_step.hpp"
#include "gateway/proxy/steps/limit_step.hpp"
#include "gateway/proxy/steps/record_step.hpp"
#include "tests/support/proxy_world.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ProxyWorld;
using testing::world_config;

/// A request parsed and routed in a context, as the session leaves it before the steps.
class Routed {
 public:
  Routed(ProxyWorld& world, std::string request) : text_(std::move(request)) {
    lease_ = std::make_unique<ContextPool::Lease>(world.contexts.acquire());
    ctx().reset(world.clock.now(), world.snapshot());
    std::size_t scanned = 0;
    const std::size_t end = http1::find_head_end(text_, scanned);
    EXPECT_FALSE(parse_head(ctx(), std::string_view(text_).substr(0, end)));
    ctx().request_id.generate();
    EXPECT_FALSE(route_request(ctx()));
  }
  [[nodiscard]] RequestContext& ctx() { return **lease_; }

 private:
  std::string text_;
  std::unique_ptr<ContextPool::Lease> lease_;
};

const Peer kPeer{boost::asio::ip::make_address("192.0.2.1"), "192.0.2.1"};

json limited_config(std::uint32_t requests, std::string mode = "enforce") {
  json c = world_config();
  c["identity"] = json::array({{{"header", "X-API-Key"}}, {{"client_ip", true}}});
  c["limits"] = {
      {"p", {{"requests", requests}, {"window_ms", 10000}, {"buckets", 10}, {"mode", mode}}}};
  c["routes"][0]["limit"] = "p";
  return c;
}

/// The Location a plain listener's redirect_to_https gives `request` (parsed in a fresh
/// context), or the error's reason when it is not a redirect.
std::string redirected(ProxyWorld& world, const std::string& request, std::uint16_t port) {
  auto lease = world.contexts.acquire();
  RequestContext& ctx = *lease;
  ctx.reset(world.clock.now(), world.snapshot());
  std::size_t scanned = 0;
  const std::size_t end = http1::find_head_end(request, scanned);
  EXPECT_FALSE(parse_head(ctx, std::string_view(request).substr(0, end)));
  const GatewayError answer = redirect_to_https(ctx, port);
  return answer == GatewayError::kRedirectToHttps ? ctx.location : std::string(info(answer).reason);
}

TEST(RedirectToHttpsTest, SendsTheSameTargetToTheHttpsPort) {
  ProxyWorld world(world_config());
  EXPECT_EQ(redirected(world, "GET /a/b?c=1 HTTP/1.1\r\nHost: api.example:8080\r\n\r\n", 8443),
            "https://api.example:8443/a/b?c=1");
  EXPECT_EQ(redirected(world, "GET /a HTTP/1.1\r\nHost: api.example\r\n\r\n", 443),
            "https://api.example/a");
  EXPECT_EQ(redirected(world, "GET /a HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 443), "https://[::1]/a");
  EXPECT_EQ(redirected(world, "GET /a HTTP/1.1\r\nHost: [::1]\r\n\r\n", 8443),
            "https://[::1]:8443/a");
  EXPECT_EQ(redirected(world, "GET http://b.example:81?x=/y HTTP/1.1\r\nHost: a\r\n\r\n", 443),
            "https://b.example/?x=/y");
  EXPECT_EQ(redirected(world, "GET /a HTTP/1.1\r\nHost: a b\r\n\r\n", 443), "bad_request");
  EXPECT_EQ(redirected(world, "GET /a HTTP/1.0\r\n\r\n", 443), "bad_request");
  EXPECT_EQ(redirected(world, "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 443), "bad_request");
}

TEST(IdentifyStepTest, NamesTheUserOnlyWhenALimitOrTheLogNeedsIt) {
  ProxyWorld plain(world_config());
  Routed a(plain, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: k1\r\n\r\n");
  identify_step(a.ctx(), kPeer, nullptr);
  EXPECT_TRUE(a.ctx().user.empty());  // no limit, no log: nobody asked
  ProxyWorld limited(limited_config(10));
  Routed b(limited, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: k1\r\n\r\n");
  identify_step(b.ctx(), kPeer, nullptr);
  EXPECT_EQ(b.ctx().user, "k1");
  EXPECT_FALSE(b.ctx().has_user_label);
  const core::KeyedHash hash = core::KeyedHash::from_secret("0123456789abcdef");
  Routed c(limited, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  identify_step(c.ctx(), kPeer, &hash);
  EXPECT_EQ(c.ctx().user, "192.0.2.1");  // the fallback: the client address
  ASSERT_TRUE(c.ctx().has_user_label);
  EXPECT_EQ(std::string_view(c.ctx().user_label.data(), 12),
            std::string_view(user_label(hash, "192.0.2.1").data(), 12));
}

TEST(IdentifyStepTest, HashesTheUserOnceForTheHeavyHittersEvenWithoutTheLog) {
  ProxyWorld counting(limited_config(10));  // admin.top_users: true by default
  const core::KeyedHash& hash = counting.services.user_hash;
  Routed a(counting, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: k1\r\n\r\n");
  identify_step(a.ctx(), kPeer, &hash, false);
  ASSERT_TRUE(a.ctx().has_user_hash);
  EXPECT_EQ(a.ctx().user_hash, hash("k1"));
  EXPECT_FALSE(a.ctx().has_user_label);  // no log: no label
  json off = limited_config(10);
  off["admin"] = {{"top_users", false}};
  ProxyWorld quiet(off);
  Routed b(quiet, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: k1\r\n\r\n");
  identify_step(b.ctx(), kPeer, &quiet.services.user_hash, false);
  EXPECT_EQ(b.ctx().user, "k1");
  EXPECT_FALSE(b.ctx().has_user_hash) << "neither the log nor a sketch needs the hash";
}

TEST(LimitStepTest, CountsEveryDecisionInThePolicysHeavyHitters) {
  ProxyWorld world(limited_config(2));
  for (int i = 0; i < 5; ++i) {
    Routed r(world, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: heavy\r\n\r\n");
    identify_step(r.ctx(), kPeer, &world.services.user_hash);
    const RouteLimit& limit = *route_limit(r.ctx());
    const auto decision = limit_now(r.ctx(), limit, world.store(), store::StoreSlot{});
    (void)apply_limit(r.ctx(), limit, *decision, world.env.top_users);
    if (i == 0) {  // the sketch's key is the hash the log's label shows
      EXPECT_EQ(log::user_label(r.ctx().user_hash), r.ctx().user_label);
    }
  }
  EXPECT_EQ(world.top_users().find("p")->top(10).tracked, 0U);  // queued, not yet counted
  EXPECT_EQ(world.top_users().drain(), 5U);
  const auto top = world.top_users().find("p")->top(10);
  ASSERT_EQ(top.users.size(), 1U);
  EXPECT_EQ(top.users[0].user, world.services.user_hash("heavy"));
  EXPECT_EQ(top.users[0].count, 5U);
  EXPECT_EQ(top.users[0].limited, 3U);  // the 429s
}

TEST(LimitStepTest, AdmitsWithTheFieldsThenRefusesWith429) {
  ProxyWorld world(limited_config(1));
  Routed first(world, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: k\r\n\r\n");
  identify_step(first.ctx(), kPeer, nullptr);
  const RouteLimit& limit = *route_limit(first.ctx());
  auto decision = limit_now(first.ctx(), limit, world.store(), store::StoreSlot{});
  ASSERT_TRUE(decision);  // the memory store decides at once
  EXPECT_FALSE(apply_limit(first.ctx(), limit, *decision, nullptr));
  ASSERT_EQ(first.ctx().extra_fields().size(), 2U);
  EXPECT_EQ(first.ctx().extra_fields()[0].value, "\"p\";q=1;w=10");
  EXPECT_EQ(first.ctx().extra_fields()[1].value, "\"p\";r=0;t=10");
  EXPECT_EQ(limit_label(first.ctx().verdict), "allowed");

  Routed second(world, "GET / HTTP/1.1\r\nHost: a\r\nX-API-Key: k\r\n\r\n");
  identify_step(second.ctx(), kPeer, nullptr);
  decision = limit_now(second.ctx(), limit, world.store(), store::StoreSlot{});
  EXPECT_EQ(apply_limit(second.ctx(), limit, *decision, nullptr), GatewayError::kRateLimited);
  EXPECT_EQ(second.ctx().retry_after_s, 10U);  // until the counted request leaves the window
  EXPECT_EQ(second.ctx().reply_body, R"({"error":"rate_limited","policy":"p","retry_after_s":10})");
  EXPECT_EQ(limit_label(second.ctx().verdict), "limited");
}

TEST(LimitStepTest, ShadowModeCountsButLetsThrough) {
  ProxyWorld world(limited_config(1, "shadow"));
  for (const char* expected : {"allowed", "shadow_limited"}) {
    Routed r(world, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    identify_step(r.ctx(), kPeer, nullptr);
    const RouteLimit& limit = *route_limit(r.ctx());
    const auto decision = limit_now(r.ctx(), limit, world.store(), store::StoreSlot{});
    EXPECT_FALSE(apply_limit(r.ctx(), limit, *decision, nullptr));  // never refused
    EXPECT_EQ(limit_label(r.ctx().verdict), expected);
  }
}

TEST(LimitStepTest, AnUnavailableSharedStoreIs503) {
  ProxyWorld world(limited_config(5));
  Routed r(world, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  const limiter::LimitDecision down{.allowed = false, .limit = 5, .unavailable = true};
  EXPECT_EQ(apply_limit(r.ctx(), *route_limit(r.ctx()), down, nullptr),
            GatewayError::kLimitStoreUnavailable);
  EXPECT_EQ(r.ctx().retry_after_s, 1U);
  EXPECT_EQ(r.ctx().extra_count, 0U);
}

TEST(LimitStepTest, AnUnavailableSharedStoreNeverRefusesUnderAShadowPolicy) {
  // on_error "deny" answers as if limited; a shadow policy never refuses a limited request.
  ProxyWorld world(limited_config(5, "shadow"));
  Routed r(world, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  const limiter::LimitDecision down{.allowed = false, .limit = 5, .unavailable = true};
  EXPECT_EQ(apply_limit(r.ctx(), *route_limit(r.ctx()), down, nullptr), std::nullopt);
  EXPECT_EQ(limit_label(r.ctx().verdict), "shadow_limited");
  EXPECT_EQ(r.ctx().extra_count, 0U);  // the store gave no counts to show
}

TEST(BreakerStepTest, AdmitsThenDropsWithA503NamingTheBackend) {
  json config = world_config();
  config["backends"]["b"]["breaker"] = {{"protection", 0}, {"k", 1.0}};
  ProxyWorld world(config);
  Routed ok(world, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_FALSE(breaker_step(ok.ctx(), world.clock.now()));
  EXPECT_TRUE(ok.ctx().admission);
  EXPECT_EQ(ok.ctx().breaker_label, "pass");
  std::move(*ok.ctx().admission).failed(world.clock.now());  // the window: 1 request, 0 accepts
  ok.ctx().admission.reset();
  world.random.push(0.0);  // p = (1 - 0 - 0) / 2 = 0.5 > 0.0: dropped
  Routed dropped(world, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(breaker_step(dropped.ctx(), world.clock.now()), GatewayError::kBackendUnavailable);
  EXPECT_EQ(dropped.ctx().breaker_label, "dropped");
  EXPECT_EQ(dropped.ctx().reply_body, R"({"error":"backend_unavailable","backend":"b"})");
  EXPECT_EQ(dropped.ctx().retry_after_s, 1U);
  EXPECT_EQ(world.snapshot().backend(0).metrics().breaker_drops->Value(), 1.0);
}

TEST(RecordStepTest, FeedsTheOutcomeTableIntoMetricsAndTheBreaker) {
  ProxyWorld world(world_config());
  const Backend& b = world.snapshot().backend(0);
  struct Case {
    UpstreamResult result;
    unsigned upstream_status;
    std::size_t outcome_index;  ///< metrics::UpstreamOutcome, or 99 for none
    std::uint64_t window_requests;
    std::uint64_t window_accepts;
  };
  const Case cases[] = {
      {UpstreamResult::kResponse, 200, 0, 1, 1},  // success
      {UpstreamResult::kResponse, 502, 1, 2, 1},  // failure status
      {UpstreamResult::kTimeout, 0, 2, 3, 1},
      {UpstreamResult::kConnectError, 0, 3, 4, 1},
      {UpstreamResult::kReset, 0, 4, 5, 1},
      {UpstreamResult::kNotSent, 0, 99, 5, 1},  // not in the window, not counted
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.result));
    Routed r(world, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    ASSERT_FALSE(breaker_step(r.ctx(), world.clock.now()));
    r.ctx().outcome.upstream = c.result;
    r.ctx().outcome.upstream_status = c.upstream_status;
    r.ctx().outcome.status = c.upstream_status;
    const double before =
        c.outcome_index < 5 ? b.metrics().upstream[c.outcome_index]->Value() : 0.0;
    record_step(r.ctx(), world.clock.now(), kPeer, nullptr);
    EXPECT_FALSE(r.ctx().admission);  // settled
    if (c.outcome_index < 5) {
      EXPECT_EQ(b.metrics().upstream[c.outcome_index]->Value(), before + 1);
    }
    const auto window = world.breakers().find("b")->snapshot();
    EXPECT_EQ(window.requests, c.window_requests);
    EXPECT_EQ(window.accepts, c.window_accepts);
  }
}

TEST(RecordStepTest, WritesOneAccessLogLineWithTheNewFields) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("sluice-record-" + std::to_string(::getpid()) + ".log");
  json config = world_config();
  config["access_log"] = {{"enabled", true}, {"path", path.string()}};
  config["http"] = {{"trusted_proxies", {"192.0.2.0/24"}}};
  {
    ProxyWorld world(config);
    log::AccessLog log(world.snapshot().config().access_log);
    auto batch = log.make_batch();
    Routed r(world,
             "GET /a/./b?secret=1 HTTP/1.0\r\nHost: api.example\r\nX-Forwarded-For: "
             "198.51.100.4\r\n\r\n");
    keep_for_log(r.ctx(), kPeer);
    r.ctx().log_path.assign(r.ctx().path);
    r.ctx().outcome.status = 404;
    world.clock.advance(2ms);
    record_step(r.ctx(), world.clock.now(), kPeer, batch.get());
    batch->flush();
    log.flush();
    std::ifstream in(path);
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    const json entry = json::parse(line);
    EXPECT_EQ(entry["path"], "/a/b");  // normalized, and never the query
    EXPECT_EQ(entry["method"], "GET");
    EXPECT_EQ(entry["host"], "api.example");
    EXPECT_EQ(entry["protocol"], "HTTP/1.0");
    EXPECT_EQ(entry["client_ip"], "198.51.100.4");  // through the trusted proxy
    EXPECT_EQ(entry["status"], 404);
    EXPECT_EQ(entry["route"], "all");
    EXPECT_DOUBLE_EQ(entry["duration_ms"].get<double>(), 2.0);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace sluice::proxy
