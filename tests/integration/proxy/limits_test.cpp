// SPDX-License-Identifier: Apache-2.0
// Per-user sliding-window rate limits through the real binary (docs/behaviour.md "Configuration":
// limits and overrides; §4 and §4a limited requests and the RateLimit headers): how many get in,
// what a rejected one looks like, that nothing rejected ever reaches the backend, across
// windows, threads and reloads. Who a request counts as: limits_identity_test.cpp.
#include "tests/integration/proxy/limits_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace limits_support;  // NOLINT(google-build-using-namespace)

TEST_F(LimitsTest, AdmitsTheLimitCountingDownThenAnswers429WithoutReachingTheBackend) {
  RawPeer upstream(RawPeer::Mode::kRespondOkThenCloseIdle, milliseconds(10000));
  SluiceProcess gateway(limited_config(upstream.endpoint(), policy(3, 60000, 60)));
  HttpClient client(gateway.proxy_port());
  const Headers alice{{"X-API-Key", "alice"}};
  const auto first = Clock::now();
  for (long long expected_r : {2, 1, 0}) {
    SCOPED_TRACE(expected_r);
    const Response res = client.get("/x", alice);
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(res["RateLimit-Policy"], "\"p\";q=3;w=60");
    const LimitField field = limit_header(res, "RateLimit");
    EXPECT_EQ(field.policy, "p");
    EXPECT_EQ(field.at("r"), expected_r);
    // t: until the oldest counted bucket (the first request's, 1 s wide) leaves the 60 s window.
    EXPECT_LE(field.at("t"), 60);
    EXPECT_GE(field.at("t"), std::max(1LL, 59 - seconds_since(first)));
  }
  EXPECT_EQ(upstream.requests(), 3U);
  for (int i = 0; i < 2; ++i) {
    const Response res = client.get("/x", alice);
    const long long n = expect_rate_limited(res, "p", 3, 60);
    EXPECT_GE(n, std::max(1LL, 59 - seconds_since(first)));
  }
  // The 429s never reached the upstream, and the connection is still usable.
  EXPECT_EQ(upstream.requests(), 3U);
  EXPECT_EQ(client.get("/x", {{"X-API-Key", "bob"}}).result_int(), 200);
  EXPECT_EQ(upstream.requests(), 4U);
}

TEST_F(LimitsTest, AdmitsAgainOnceTheWindowHasSlidPastTheCountedRequests) {
  SluiceProcess gateway(limited_config(backend.endpoint(), policy(2, 1000, 10)));
  HttpClient client(gateway.proxy_port());
  const Headers alice{{"X-API-Key", "alice"}};
  const auto first_sent = Clock::now();
  Response res = client.get("/ok", alice);
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_EQ(res["RateLimit-Policy"], "\"p\";q=2;w=1");
  EXPECT_EQ(limit_header(res, "RateLimit").at("t"), 1);
  ASSERT_EQ(client.get("/ok", alice).result_int(), 200);
  EXPECT_EQ(expect_rate_limited(client.get("/ok", alice), "p", 2, 1), 1);

  // Poll: rejected requests are not counted, so polling does not push the reopening back.
  ASSERT_TRUE(wait_until(
      "alice admitted again (a 1 s window)",
      [&] {
        res = client.get("/ok", alice);
        EXPECT_TRUE(res.result_int() == 200 || res.result_int() == 429) << res.result_int();
        return res.result_int() == 200;
      },
      milliseconds(3000), milliseconds(50)));
  // Never 3 admitted within window - window/buckets = 900 ms (docs/behaviour.md "Limits": the
  // guarantee).
  EXPECT_GE(Clock::now() - first_sent, milliseconds(900));
  EXPECT_GE(remaining(res), 0);
  EXPECT_LE(remaining(res), 1);
}

TEST_F(LimitsTest, ShadowModeNeverRejectsButShowsAndCountsTheExcess) {
  SluiceProcess gateway(limited_config(backend.endpoint(), policy(2, 60000, 60, "shadow")));
  HttpClient client(gateway.proxy_port());
  const Headers alice{{"X-API-Key", "alice"}};
  for (const long long r : {1, 0, 0, 0, 0}) {
    const Response res = client.get("/ok", alice);
    ASSERT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.count("X-Backend-Port"), 1U);  // proxied, not answered by the gateway
    EXPECT_EQ(res["RateLimit-Policy"], "\"p\";q=2;w=60");
    EXPECT_EQ(remaining(res), r);
  }
  // Exactly the three past the limit are shadow_limited; shadow-limited ones are not counted in
  // the window, so nothing is "limited".
  const Labels shadow{{"policy", "p"}, {"result", "shadow_limited"}};
  const Scrape s = scrape_until(gateway, "3 shadow-limited requests counted", [&](const Scrape& t) {
    return t.value("sluice_ratelimit_requests_total", shadow) >= 3;
  });
  EXPECT_EQ(s.value("sluice_ratelimit_requests_total", shadow), 3) << s.text();
  EXPECT_EQ(s.value("sluice_ratelimit_requests_total", {{"policy", "p"}, {"result", "allowed"}}),
            2);
  EXPECT_EQ(s.value("sluice_ratelimit_requests_total", {{"policy", "p"}, {"result", "limited"}}),
            0);
}

TEST_F(LimitsTest, AnOverrideGivesOneKeyItsOwnLimit) {
  config = limited_config(backend.endpoint(), policy(2));
  config["overrides"] = {{"p", {{"partner", {{"requests", 5}}}}}};
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  const Headers partner{{"X-API-Key", "partner"}};
  for (long long r = 4; r >= 0; --r) {
    const Response res = client.get("/ok", partner);
    ASSERT_EQ(res.result_int(), 200) << "request " << 5 - r;
    EXPECT_EQ(res["RateLimit-Policy"], "\"p\";q=5;w=60");
    EXPECT_EQ(remaining(res), r);
  }
  expect_rate_limited(client.get("/ok", partner), "p", 5, 60);
  // Everybody else keeps the policy's 2.
  const Headers other{{"X-API-Key", "someone"}};
  EXPECT_EQ(quota(client.get("/ok", other)), 2);
  EXPECT_EQ(client.get("/ok", other).result_int(), 200);
  expect_rate_limited(client.get("/ok", other), "p", 2, 60);
}

TEST_F(LimitsTest, AdmitsExactlyTheLimitFromConcurrentConnectionsAcrossGatewayThreads) {
  constexpr int kLimit = 50;
  constexpr int kConnections = 64;
  constexpr int kRequestsEach = 2;
  json c = limited_config(backend.endpoint(), policy(kLimit));
  c["threads"] = 2;
  SluiceProcess gateway(c);
  ASSERT_EQ(gateway.threads(), 2U);

  std::atomic<int> admitted{0};
  std::atomic<int> limited{0};
  std::atomic<int> other{0};
  std::atomic<int> errors{0};
  std::mutex mutex;
  std::vector<long long> remainders;  // r of every admitted response
  std::latch start(kConnections);
  std::vector<std::thread> threads;
  threads.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    threads.emplace_back([&] {
      std::optional<HttpClient> client;
      try {
        client.emplace(gateway.proxy_port());
      } catch (const std::exception&) {
        ++errors;
      }
      start.arrive_and_wait();  // every connection is open: fire together
      if (!client) {
        return;
      }
      try {
        for (int n = 0; n < kRequestsEach; ++n) {
          const Response res = client->get("/ok", {{"X-API-Key", "shared"}});
          if (res.result_int() == 200) {
            ++admitted;
            const auto field = parse_limit_field(res["RateLimit"]);
            const std::scoped_lock lock(mutex);
            remainders.push_back(field && field->params.contains("r") ? field->params.at("r") : -1);
          } else if (res.result_int() == 429) {
            ++limited;
          } else {
            ++other;
          }
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(admitted.load(), kLimit);
  EXPECT_EQ(limited.load(), kConnections * kRequestsEach - kLimit);
  // Every admission saw its own count: the remainders are 0..49, each once.
  std::sort(remainders.begin(), remainders.end());
  std::vector<long long> expected(kLimit);
  for (int i = 0; i < kLimit; ++i) {
    expected[static_cast<std::size_t>(i)] = i;
  }
  EXPECT_EQ(remainders, expected);
}

TEST_F(LimitsTest, CountsSurviveAReloadThatKeepsThePolicy) {
  config = limited_config(backend.endpoint(), policy(2));
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  const Headers alice{{"X-API-Key", "alice"}};
  ASSERT_EQ(client.get("/ok", alice).result_int(), 200);
  ASSERT_EQ(client.get("/ok", alice).result_int(), 200);
  // Same policy, another route table: alice's two requests are still in the window.
  json changed = config;
  changed["routes"] = json::array({
      {{"name", "renamed"}, {"prefix", "/"}, {"backend", "demo"}, {"limit", "p"}},
  });
  const std::size_t mark = gateway.process().line_count();
  gateway.rewrite_config(changed);
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark, "reload ok"))
      << gateway.process().output();
  expect_rate_limited(client.get("/ok", alice), "p", 2, 60);
  EXPECT_EQ(remaining(client.get("/ok", {{"X-API-Key", "bob"}})), 1);
}

TEST_F(LimitsTest, RoutesWithoutALimitCarryNoRateLimitHeaders) {
  config = limited_config(backend.endpoint(), policy(1));
  config["routes"] = json::array({{{"name", "open"}, {"prefix", "/"}, {"backend", "demo"}}});
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  for (int i = 0; i < 3; ++i) {
    const Response res = client.get("/ok", {{"X-API-Key", "alice"}});
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.count("RateLimit"), 0U);
    EXPECT_EQ(res.count("RateLimit-Policy"), 0U);
    EXPECT_EQ(res.count(http::field::retry_after), 0U);
  }
}

}  // namespace
}  // namespace sluice::testing
