// SPDX-License-Identifier: Apache-2.0
// Per-user sliding-window rate limits through the real binary (docs/behaviour.md "Configuration":
// identity, limits and overrides; §4 and §4a limited requests and the RateLimit headers; §7 what
// the access log shows of a user): who a request counts as, how many get in, what a rejected one
// looks like, and that nothing rejected ever reaches the backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// A `limits` policy object.
json policy(int requests, int window_ms = 60000, int buckets = 60, const char* mode = "enforce") {
  return {{"requests", requests}, {"window_ms", window_ms}, {"buckets", buckets}, {"mode", mode}};
}

/// minimal_gateway_config over `endpoint` with the documented identity chain (X-API-Key, then a
/// bearer token, then the client IP), policy "p" and the catch-all route limited by it.
json limited_config(const std::string& endpoint, const json& p) {
  json c = minimal_gateway_config({endpoint});
  c["identity"] = json::array(
      {json{{"header", "X-API-Key"}}, json{{"bearer", true}}, json{{"client_ip", true}}});
  c["limits"] = {{"p", p}};
  c["routes"][0]["limit"] = "p";
  return c;
}

/// A parsed `RateLimit` or `RateLimit-Policy` field: `"NAME";key=INT;key=INT...`.
struct LimitField {
  std::string policy;
  std::map<std::string, long long> params;

  [[nodiscard]] long long at(const std::string& key) const {
    const auto it = params.find(key);
    if (it == params.end()) {
      throw std::runtime_error("no parameter " + key + " in the field");
    }
    return it->second;
  }
};

/// Parses `"p";q=3;w=60` (spaces after ';' tolerated, as structured fields allow); nullopt if
/// the text is not of that shape.
std::optional<LimitField> parse_limit_field(std::string_view text) {
  LimitField field;
  if (text.size() < 2 || text.front() != '"') {
    return std::nullopt;
  }
  const std::size_t close = text.find('"', 1);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  field.policy = std::string(text.substr(1, close - 1));
  std::size_t pos = close + 1;
  while (pos < text.size()) {
    if (text[pos] != ';') {
      return std::nullopt;
    }
    ++pos;
    while (pos < text.size() && text[pos] == ' ') {
      ++pos;
    }
    const std::size_t eq = text.find('=', pos);
    if (eq == std::string_view::npos || eq == pos) {
      return std::nullopt;
    }
    const std::string key(text.substr(pos, eq - pos));
    std::size_t end = eq + 1;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
      ++end;
    }
    if (end == eq + 1) {
      return std::nullopt;
    }
    field.params[key] = std::stoll(std::string(text.substr(eq + 1, end - eq - 1)));
    pos = end;
  }
  return field;
}

/// The parsed header `name` of `res`; a failed expectation and an empty field if absent or
/// malformed.
LimitField limit_header(const Response& res, std::string_view name) {
  const auto it = res.find(name);
  if (it == res.end()) {
    ADD_FAILURE() << "no " << name << " header on a " << res.result_int() << " response";
    return {};
  }
  auto field = parse_limit_field(it->value());
  if (!field) {
    ADD_FAILURE() << name << " is not a \"policy\";key=value... field: " << it->value();
    return {};
  }
  return *field;
}

/// `r` of the RateLimit header (-1 if absent or malformed, with a failed expectation).
long long remaining(const Response& res) {
  const LimitField field = limit_header(res, "RateLimit");
  const auto it = field.params.find("r");
  return it == field.params.end() ? -1 : it->second;
}

/// `q` of the RateLimit-Policy header (-1 if absent or malformed, with a failed expectation).
long long quota(const Response& res) {
  const LimitField field = limit_header(res, "RateLimit-Policy");
  const auto it = field.params.find("q");
  return it == field.params.end() ? -1 : it->second;
}

/// Whole seconds since `start`, rounded up.
long long seconds_since(Clock::time_point start) {
  const auto ms = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  return (ms + 999) / 1000;
}

/// Checks everything docs/behaviour.md "Limits" says about a limited request's reply under policy
/// `name` with effective limit `q` and window `w` seconds; returns its N (Retry-After), 0 if
/// unusable.
long long expect_rate_limited(const Response& res, const std::string& name, long long q,
                              long long w) {
  EXPECT_EQ(res.result_int(), 429) << res.body();
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res.count("X-Backend-Port"), 0U) << "a limited request reached the backend";
  EXPECT_TRUE(res.keep_alive());
  const std::string retry_after(res[http::field::retry_after]);
  long long n = 0;
  try {
    n = std::stoll(retry_after);
  } catch (const std::exception&) {
    ADD_FAILURE() << "Retry-After is not a number of seconds: '" << retry_after << "'";
    return 0;
  }
  EXPECT_EQ(std::to_string(n), retry_after) << "Retry-After must be whole seconds";
  EXPECT_GE(n, 1);
  EXPECT_LE(n, w);
  EXPECT_EQ(res["RateLimit-Policy"],
            "\"" + name + "\";q=" + std::to_string(q) + ";w=" + std::to_string(w));
  EXPECT_EQ(res["RateLimit"], "\"" + name + "\";r=0;t=" + std::to_string(n));
  const json body = json::parse(res.body(), nullptr, false);
  EXPECT_EQ(body, (json{{"error", "rate_limited"}, {"policy", name}, {"retry_after_s", n}}))
      << res.body();
  return n;
}

class LimitsTest : public ::testing::Test, protected ProxyFixtureBase {};

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

TEST_F(LimitsTest, CountsUsersWithDifferentApiKeysApart) {
  SluiceProcess gateway(limited_config(backend.endpoint(), policy(2)));
  HttpClient client(gateway.proxy_port());
  const Headers alice{{"X-API-Key", "alice"}};
  const Headers bob{{"X-API-Key", "bob"}};
  EXPECT_EQ(remaining(client.get("/ok", alice)), 1);
  EXPECT_EQ(remaining(client.get("/ok", alice)), 0);
  expect_rate_limited(client.get("/ok", alice), "p", 2, 60);
  // Bob has his own full allowance, and using it does not give Alice any back.
  const Response first_of_bob = client.get("/ok", bob);
  EXPECT_EQ(first_of_bob.result_int(), 200);
  EXPECT_EQ(remaining(first_of_bob), 1);
  EXPECT_EQ(remaining(client.get("/ok", bob)), 0);
  expect_rate_limited(client.get("/ok", bob), "p", 2, 60);
  expect_rate_limited(client.get("/ok", alice), "p", 2, 60);
}

TEST_F(LimitsTest, UsesTheBearerTokenWhenNoApiKeyIsSentAndTheApiKeyFirst) {
  SluiceProcess gateway(limited_config(backend.endpoint(), policy(1)));
  HttpClient client(gateway.proxy_port());
  const Headers abc{{"Authorization", "Bearer abc"}};
  EXPECT_EQ(client.get("/ok", abc).result_int(), 200);
  expect_rate_limited(client.get("/ok", abc), "p", 1, 60);
  // Another token is another user.
  EXPECT_EQ(client.get("/ok", {{"Authorization", "Bearer xyz"}}).result_int(), 200);
  // An X-API-Key comes first in the identity list: with one, the spent token does not matter.
  EXPECT_EQ(client.get("/ok", {{"X-API-Key", "k1"}, {"Authorization", "Bearer abc"}}).result_int(),
            200);
  // Neither: the client IP, which nobody has used yet.
  EXPECT_EQ(client.get("/ok").result_int(), 200);
  expect_rate_limited(client.get("/ok"), "p", 1, 60);
}

TEST_F(LimitsTest, FallsBackToTheClientIpWhenNoIdentitySourceYieldsAValue) {
  config = limited_config(backend.endpoint(), policy(2));
  config["identity"] = json::array({json{{"header", "X-API-Key"}}});  // no client_ip source
  config["http"] = {{"trusted_proxies", json::array()}};
  SluiceProcess gateway(config);
  // Two connections from 127.0.0.1 without a key: one user.
  HttpClient first(gateway.proxy_port());
  HttpClient second(gateway.proxy_port());
  EXPECT_EQ(remaining(first.get("/ok")), 1);
  EXPECT_EQ(remaining(second.get("/ok")), 0);
  expect_rate_limited(first.get("/ok"), "p", 2, 60);
  EXPECT_EQ(first.get("/ok", {{"X-API-Key", "alice"}}).result_int(), 200);
}

TEST_F(LimitsTest, IgnoresForwardedForFromAPeerThatIsNotATrustedProxy) {
  config = limited_config(backend.endpoint(), policy(2));
  config["identity"] = json::array({json{{"client_ip", true}}});
  config["http"] = {{"trusted_proxies", json::array()}};
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  // Each claims another client, but 127.0.0.1 is not trusted: all three are 127.0.0.1.
  EXPECT_EQ(client.get("/ok", {{"X-Forwarded-For", "198.51.100.1"}}).result_int(), 200);
  EXPECT_EQ(client.get("/ok", {{"X-Forwarded-For", "198.51.100.2"}}).result_int(), 200);
  expect_rate_limited(client.get("/ok", {{"X-Forwarded-For", "198.51.100.3"}}), "p", 2, 60);
  expect_rate_limited(client.get("/ok"), "p", 2, 60);
}

TEST_F(LimitsTest, TakesTheRightmostUntrustedForwardedForAddressFromATrustedProxy) {
  config = limited_config(backend.endpoint(), policy(3));
  config["http"] = {{"trusted_proxies", {"127.0.0.1/32"}}};
  // The overrides make the key that was used visible as q in RateLimit-Policy.
  config["overrides"] = {
      {"p", {{"203.0.113.5", {{"requests", 1}}}, {"198.51.100.7", {{"requests", 2}}}}}};
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());

  // The client is the rightmost address that is not a trusted proxy: 203.0.113.5.
  const Headers via_proxy{{"X-Forwarded-For", "198.51.100.7, 203.0.113.5"}};
  Response res = client.get("/ok", via_proxy);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res["RateLimit-Policy"], "\"p\";q=1;w=60");
  EXPECT_EQ(remaining(res), 0);
  expect_rate_limited(client.get("/ok", via_proxy), "p", 1, 60);
  // Trusted hops on the right are skipped: still 203.0.113.5, still spent.
  expect_rate_limited(client.get("/ok", {{"X-Forwarded-For", "203.0.113.5, 127.0.0.1"}}), "p", 1,
                      60);
  // The other order names 198.51.100.7 (its own override, 2).
  res = client.get("/ok", {{"X-Forwarded-For", "203.0.113.5, 198.51.100.7"}});
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(quota(res), 2);
  // No X-Forwarded-For: the peer itself, without an override.
  res = client.get("/ok");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(quota(res), 3);
  EXPECT_EQ(remaining(res), 2);
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

TEST_F(LimitsTest, TheAccessLogShowsTheLimitDecisionAndNeverTheRawCredential) {
  const std::string api_key = "sk-live-4f9a1c7e";
  const std::string token = "tok-secret-83b2d6";
  config = limited_config(backend.endpoint(), policy(2));
  config["routes"] = json::array({
      {{"name", "open"}, {"prefix", "/open"}, {"backend", "demo"}, {"strip_prefix", true}},
      {{"name", "limited"}, {"prefix", "/"}, {"backend", "demo"}, {"limit", "p"}},
  });
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  std::size_t last_body_bytes = 0;
  const auto send = [&](std::string_view target, const std::string& id, Headers headers) {
    headers.emplace_back("X-Request-Id", id);
    const Response res = client.get(target, headers);
    last_body_bytes = res.body().size();
    return res.result_int();
  };
  ASSERT_EQ(send("/ok", "lim-1", {{"X-API-Key", api_key}}), 200);
  ASSERT_EQ(send("/ok", "lim-2", {{"X-API-Key", api_key}}), 200);
  ASSERT_EQ(send("/ok", "lim-3", {{"X-API-Key", api_key}}), 429);
  const std::size_t limited_body_bytes = last_body_bytes;
  ASSERT_EQ(send("/ok", "lim-4", {{"Authorization", "Bearer " + token}}), 200);
  ASSERT_EQ(send("/open/ok", "lim-5", {{"X-API-Key", api_key}}), 200);

  const auto entry = [&](const std::string& id) {
    std::string line;
    if (!gateway.process().wait_for_line(R"("request_id":")" + id + "\"", kDefaultTimeout, &line)) {
      ADD_FAILURE() << "no access log line for " << id << ":\n" << gateway.process().output();
      return json::object();
    }
    return json::parse(line);
  };
  const json first = entry("lim-1");
  const json second = entry("lim-2");
  const json third = entry("lim-3");
  const json bearer = entry("lim-4");
  const json open = entry("lim-5");
  EXPECT_EQ(first["limit"], "allowed");
  EXPECT_EQ(second["limit"], "allowed");
  EXPECT_EQ(third["limit"], "limited");
  EXPECT_EQ(third["status"], 429);
  EXPECT_EQ(third["route"], "limited");
  EXPECT_EQ(third["bytes_out"], limited_body_bytes);  // the gateway's own JSON body counts too
  EXPECT_EQ(bearer["limit"], "allowed");
  EXPECT_EQ(open["limit"], "none");
  // The user is there, as the same short hash every time, and never as the credential.
  for (const json* e : {&first, &second, &third, &bearer}) {
    ASSERT_TRUE((*e)["user"].is_string()) << e->dump();
    const std::string user = (*e)["user"].get<std::string>();
    EXPECT_FALSE(user.empty());
    EXPECT_EQ(user.find(api_key), std::string::npos) << user;
    EXPECT_EQ(user.find(token), std::string::npos) << user;
  }
  EXPECT_EQ(first["user"], second["user"]);
  EXPECT_EQ(first["user"], third["user"]);
  EXPECT_NE(first["user"], bearer["user"]);
  // Nowhere in the gateway's output at all.
  const std::string output = gateway.process().output();
  EXPECT_EQ(output.find(api_key), std::string::npos);
  EXPECT_EQ(output.find(token), std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
