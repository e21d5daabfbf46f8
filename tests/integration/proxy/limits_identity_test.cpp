// SPDX-License-Identifier: Apache-2.0
// Who a request counts as under a per-user limit, through the real binary (docs/behaviour.md
// "Configuration": identity; §7 what the access log shows of a user): API keys, bearer tokens,
// the client IP and X-Forwarded-For from trusted proxies. The rest: limits_test.cpp.
#include "tests/integration/proxy/limits_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace limits_support;  // NOLINT(google-build-using-namespace)

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
