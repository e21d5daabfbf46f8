// SPDX-License-Identifier: Apache-2.0
// Validation of limits, overrides, backends and routes, including cross references.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "gateway/config/config_loader.hpp"
#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using test_support::parsed;
using test_support::problems_of;
using test_support::valid_document;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using Json = nlohmann::json;

constexpr std::string_view kInvalidName = "invalid name: use 1-64 characters from A-Z a-z 0-9 _ -";

// --- limits ---

TEST(TrafficSectionsTest, RejectsInvalidPolicyNames) {
  auto doc = valid_document();
  doc["limits"]["bad name"] = {{"requests", 1}, {"window_ms", 1000}};
  doc["limits"][std::string(65, 'p')] = {{"requests", 1}, {"window_ms", 1000}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(limits["bad name"]: )" + std::string(kInvalidName),
                          "limits." + std::string(65, 'p') + ": " + std::string(kInvalidName)));
}

TEST(TrafficSectionsTest, RequiresRequestsAndWindow) {
  auto doc = valid_document();
  doc["limits"]["standard"] = Json::object();
  EXPECT_THAT(problems_of(doc), ElementsAre("limits.standard.requests: is required",
                                            "limits.standard.window_ms: is required"));
}

TEST(TrafficSectionsTest, ChecksPolicyRanges) {
  auto doc = valid_document();
  doc["limits"]["standard"] = {
      {"requests", 0}, {"window_ms", 86400001}, {"buckets", 3601}, {"mode", "log"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("limits.standard.requests: must be between 1 and 4294967295",
                          "limits.standard.window_ms: must be between 1 and 86400000",
                          "limits.standard.buckets: must be between 1 and 3600",
                          R"(limits.standard.mode: must be one of "enforce", "shadow")"));
}

TEST(TrafficSectionsTest, RejectsBucketsThatDoNotDivideTheWindow) {
  auto doc = valid_document();
  doc["limits"]["standard"]["buckets"] = 7;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("limits.standard.buckets: must divide window_ms (60000) evenly"));
}

TEST(TrafficSectionsTest, SaysWhenTheDefaultBucketsDoNotDivideTheWindow) {
  auto doc = valid_document();
  doc["limits"]["standard"]["window_ms"] = 1005;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("limits.standard.buckets: must divide window_ms (1005) evenly "
                          "(buckets defaults to 10)"));
}

TEST(TrafficSectionsTest, RejectsPolicyThatIsNotAnObject) {
  auto doc = valid_document();
  doc["limits"]["standard"] = 100;
  EXPECT_THAT(problems_of(doc), ElementsAre("limits.standard: must be an object"));
}

TEST(TrafficSectionsTest, ParsesPolicyValues) {
  auto doc = valid_document();
  doc["limits"]["standard"] = {
      {"requests", 4294967295U}, {"window_ms", 3600}, {"buckets", 3600}, {"mode", "shadow"}};
  EXPECT_EQ(parsed(doc).limits.at("standard"),
            (LimitPolicyConfig{4294967295U, 3600ms, 3600, LimitMode::kShadow}));
}

// --- overrides ---

TEST(TrafficSectionsTest, ParsesOverridesIncludingZeroToBlockAKey) {
  auto doc = valid_document();
  doc["overrides"] =
      Json::parse(R"({"standard": {"partner-42": {"requests": 5000}, "abuser": {"requests": 0}}})");
  const auto overrides = parsed(doc).overrides;
  EXPECT_EQ(overrides.at("standard").at("partner-42"), 5000U);
  EXPECT_EQ(overrides.at("standard").at("abuser"), 0U);
}

TEST(TrafficSectionsTest, RejectsOverridesForUnknownPolicies) {
  auto doc = valid_document();
  doc["overrides"] = Json::parse(R"({"premium": {"k": {"requests": 1}}})");
  EXPECT_THAT(problems_of(doc), ElementsAre("overrides.premium: no such policy in limits"));
}

TEST(TrafficSectionsTest, RejectsEmptyOverrideKey) {
  auto doc = valid_document();
  doc["overrides"] = Json::parse(R"({"standard": {"": {"requests": 1}}})");
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(overrides.standard[""]: empty key)"));
}

TEST(TrafficSectionsTest, ChecksOverrideBodies) {
  auto doc = valid_document();
  doc["overrides"] = Json::parse(
      R"({"standard": {"a": {}, "b": {"requests": -1}, "c": {"requests": 1, "window_ms": 5},
                       "d": 7}})");
  EXPECT_THAT(problems_of(doc),
              ElementsAre("overrides.standard.a.requests: is required",
                          "overrides.standard.b.requests: must be between 0 and 4294967295",
                          "overrides.standard.c.window_ms: unknown field",
                          "overrides.standard.d: must be an object"));
}

TEST(TrafficSectionsTest, SkipsPolicyReferencesWhenLimitsIsMalformed) {
  auto doc = valid_document();
  doc["limits"] = Json::array();
  doc["overrides"] = Json::parse(R"({"standard": {"k": {"requests": 1}}})");
  EXPECT_THAT(problems_of(doc), ElementsAre("limits: must be an object"));
}

// --- backends ---

TEST(TrafficSectionsTest, RejectsInvalidBackendNames) {
  auto doc = valid_document();
  doc["backends"]["users/v2"] = {{"endpoints", {"127.0.0.1:9002"}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(backends["users/v2"]: )" + std::string(kInvalidName)));
}

TEST(TrafficSectionsTest, RequiresNonEmptyEndpoints) {
  auto doc = valid_document();
  doc["backends"]["a"] = Json::object();
  doc["backends"]["b"] = {{"endpoints", Json::array()}};
  doc["backends"]["c"] = {{"endpoints", "127.0.0.1:80"}};
  EXPECT_THAT(problems_of(doc), ElementsAre("backends.a.endpoints: is required",
                                            "backends.b.endpoints: must list at least one endpoint",
                                            "backends.c.endpoints: must be an array"));
}

TEST(TrafficSectionsTest, ReportsBadEndpointsAtTheirIndex) {
  auto doc = valid_document();
  doc["backends"]["users"]["endpoints"] = {
      "127.0.0.1:9001", "127.0.0.1:0",    "users",       9003,
      "[::1]:9004",     "127.0.0.1:9001", "LocalHost:1", "localhost:1"};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.endpoints[1]: port must be between 1 and 65535",
                          "backends.users.endpoints[2]: must be host:port (e.g. 127.0.0.1:9001)",
                          "backends.users.endpoints[3]: must be a string",
                          "backends.users.endpoints[5]: duplicate endpoint",
                          "backends.users.endpoints[7]: duplicate endpoint"));
}

TEST(TrafficSectionsTest, ChecksBackendFields) {
  auto doc = valid_document();
  doc["backends"]["users"] = {{"endpoints", {"127.0.0.1:9001"}}, {"balance", "p2c"},
                              {"connect_timeout_ms", 600001},    {"timeout_ms", 0},
                              {"max_idle_per_endpoint", 100001}, {"breaker", true}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          R"(backends.users.balance: must be one of "round_robin", "least_request", "random")",
          "backends.users.connect_timeout_ms: must be between 1 and 600000",
          "backends.users.timeout_ms: must be between 1 and 3600000",
          "backends.users.max_idle_per_endpoint: must be between 0 and 100000",
          "backends.users.breaker: must be an object"));
}

TEST(TrafficSectionsTest, ABackendSpeaksTlsWithItsFilesAndNames) {
  auto doc = valid_document();
  doc["backends"]["users"]["tls"] = {{"enabled", true},
                                     {"ca", "/etc/sluice/internal-ca.pem"},
                                     {"server_name", "users.internal"},
                                     {"cert", "/etc/sluice/gw.pem"},
                                     {"key", "/etc/sluice/gw.key"}};
  const auto config = parsed(doc);
  const auto& tls = config.backends.at("users").tls;
  ASSERT_TRUE(tls);
  EXPECT_TRUE(config.backends.at("users").speaks_tls());
  EXPECT_EQ(tls->ca, "/etc/sluice/internal-ca.pem");
  EXPECT_TRUE(tls->verify);
  EXPECT_EQ(tls->server_name, "users.internal");
  EXPECT_EQ(tls->key, "/etc/sluice/gw.key");
  // Defaults: enabled, the system store, verified, the endpoint's host, no client certificate.
  doc["backends"]["users"]["tls"] = Json::object();
  const auto defaults = parsed(doc).backends.at("users").tls;
  EXPECT_EQ(*defaults, config::BackendTlsConfig{});
  EXPECT_TRUE(parsed(doc).backends.at("users").speaks_tls());
  doc["backends"]["users"]["tls"] = {{"enabled", false}, {"ca", nullptr}};
  EXPECT_FALSE(parsed(doc).backends.at("users").speaks_tls());
}

TEST(TrafficSectionsTest, ABackendSpeaksHttp2WithOrWithoutTls) {
  auto doc = valid_document();
  EXPECT_EQ(parsed(doc).backends.at("users").protocol, UpstreamProtocol::kHttp1);
  EXPECT_EQ(parsed(doc).backends.at("users").max_streams_per_connection, 100U);
  doc["backends"]["users"]["protocol"] = "h2c";
  doc["backends"]["users"]["max_streams_per_connection"] = 32;
  EXPECT_EQ(parsed(doc).backends.at("users").protocol, UpstreamProtocol::kH2c);
  EXPECT_EQ(parsed(doc).backends.at("users").max_streams_per_connection, 32U);
  doc["backends"]["users"]["protocol"] = "h2";
  doc["backends"]["users"]["tls"] = {{"enabled", true}};
  EXPECT_EQ(parsed(doc).backends.at("users").protocol, UpstreamProtocol::kH2);
  EXPECT_EQ(parsed(doc).backends.at("users").breaker.failure_grpc_statuses,
            (std::vector<int>{14, 4, 8}));
}

TEST(TrafficSectionsTest, ChecksBackendProtocolFields) {
  auto doc = valid_document();
  doc["backends"]["users"]["protocol"] = "h3";
  doc["backends"]["users"]["max_streams_per_connection"] = 0;
  doc["backends"]["users"]["breaker"] = {{"failure_grpc_statuses", {14, 0, 17}}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre("backends.users.breaker.failure_grpc_statuses[1]: must be between 1 and 16",
                  "backends.users.breaker.failure_grpc_statuses[2]: must be between 1 and 16",
                  R"(backends.users.protocol: must be one of "http1", "h2", "h2c")",
                  "backends.users.max_streams_per_connection: must be between 1 and 10000"));
  doc = valid_document();
  doc["backends"]["users"]["protocol"] = "h2";
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          R"(backends.users.protocol: "h2" needs "tls": {"enabled": true} (use "h2c" without TLS))"));
  doc["backends"]["users"]["protocol"] = "h2c";
  doc["backends"]["users"]["tls"] = {{"enabled", true}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(R"(backends.users.protocol: "h2c" is HTTP/2 without TLS (use "h2" with TLS))"));
}

TEST(TrafficSectionsTest, ChecksBackendTlsFields) {
  auto doc = valid_document();
  doc["backends"]["users"]["tls"] = {{"enabled", "yes"}, {"ca", ""},
                                     {"verify", 0},      {"server_name", "not a name"},
                                     {"cert", "/a.pem"}, {"alpn", "h2"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.tls.enabled: must be a boolean",
                          "backends.users.tls.ca: must be a file name (or null)",
                          "backends.users.tls.verify: must be a boolean",
                          "backends.users.tls.server_name: must be a host name (or null: the "
                          "endpoint's host)",
                          "backends.users.tls.key: is needed with the other (a client "
                          "certificate and its key)",
                          "backends.users.tls.alpn: unknown field"));
}

TEST(TrafficSectionsTest, ChecksBreakerFields) {
  auto doc = valid_document();
  doc["backends"]["users"]["breaker"] = {{"enabled", "no"},  {"k", 0.5},
                                         {"protection", -1}, {"window_ms", 0},
                                         {"buckets", 0},     {"failure_statuses", {500, 600, 1.5}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.breaker.enabled: must be a boolean",
                          "backends.users.breaker.k: must be between 1 and 100",
                          "backends.users.breaker.protection: must be between 0 and 1000000",
                          "backends.users.breaker.window_ms: must be between 1 and 3600000",
                          "backends.users.breaker.buckets: must be between 1 and 3600",
                          "backends.users.breaker.failure_statuses[1]: must be between 100 and 599",
                          "backends.users.breaker.failure_statuses[2]: must be an integer"));
}

TEST(TrafficSectionsTest, AppliesBreakerDivisibilityRuleWithDefaults) {
  auto doc = valid_document();
  doc["backends"]["users"]["breaker"] = {{"buckets", 30}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.breaker.buckets: must divide window_ms (10000) evenly"));
  doc["backends"]["users"]["breaker"] = {{"window_ms", 1010}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.breaker.buckets: must divide window_ms (1010) evenly "
                          "(buckets defaults to 40)"));
}

TEST(TrafficSectionsTest, ParsesBreakerValues) {
  auto doc = valid_document();
  doc["backends"]["users"]["breaker"] = {{"enabled", false},  {"k", 2},
                                         {"protection", 0.5}, {"window_ms", 5000},
                                         {"buckets", 50},     {"failure_statuses", Json::array()}};
  EXPECT_EQ(parsed(doc).backends.at("users").breaker,
            (BreakerConfig{false, 2.0, 0.5, 5000ms, 50, {}}));
}

TEST(TrafficSectionsTest, ParsesBreakerModeAndSlowCalls) {
  auto doc = valid_document();
  doc["backends"]["users"]["breaker"] = {{"mode", "shadow"}, {"slow_ms", 250}};
  const BreakerConfig breaker = parsed(doc).backends.at("users").breaker;
  EXPECT_EQ(breaker.mode, EnforcementMode::kShadow);
  EXPECT_EQ(breaker.slow, 250ms);
  EXPECT_EQ(parsed(valid_document()).backends.at("users").breaker.mode, EnforcementMode::kEnforce);
  doc["backends"]["users"]["breaker"] = {{"mode", "observe"}, {"slow_ms", -1}};
  EXPECT_THAT(problems_of(doc),
              UnorderedElementsAre(HasSubstr("backends.users.breaker.mode: must be one of"),
                                   HasSubstr("backends.users.breaker.slow_ms: ")));
}

TEST(TrafficSectionsTest, ParsesTheConcurrencyLimit) {
  auto doc = valid_document();
  EXPECT_FALSE(parsed(doc).backends.at("users").concurrency);
  doc["backends"]["users"]["concurrency"] = Json::object();
  EXPECT_EQ(parsed(doc).backends.at("users").concurrency, (ConcurrencyConfig{true, 4, 1000}));
  doc["backends"]["users"]["concurrency"] = {{"enabled", false}, {"min", 8}, {"max", 64}};
  EXPECT_EQ(parsed(doc).backends.at("users").concurrency, (ConcurrencyConfig{false, 8, 64}));
}

TEST(TrafficSectionsTest, RejectsAConcurrencyMinimumAboveItsMaximumOrZero) {
  auto doc = valid_document();
  doc["backends"]["users"]["concurrency"] = {{"min", 50}, {"max", 10}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.concurrency.min: must not exceed max (10)"));
  doc["backends"]["users"]["concurrency"] = {{"min", 0}, {"limit", 5}};
  EXPECT_THAT(problems_of(doc),
              UnorderedElementsAre(HasSubstr("backends.users.concurrency.limit: "),
                                   HasSubstr("backends.users.concurrency.min: ")));
}

// --- routes ---

TEST(TrafficSectionsTest, RequiresRouteNamePrefixAndBackend) {
  auto doc = valid_document();
  doc["routes"][0] = Json::object();
  EXPECT_THAT(problems_of(doc),
              ElementsAre("routes[0].name: is required", "routes[0].prefix: is required",
                          "routes[0].backend: is required"));
}

TEST(TrafficSectionsTest, RejectsInvalidRouteName) {
  auto doc = valid_document();
  doc["routes"][0]["name"] = "users api";
  EXPECT_THAT(problems_of(doc), ElementsAre("routes[0].name: " + std::string(kInvalidName)));
}

TEST(TrafficSectionsTest, RejectsDuplicateRouteNamesAtTheLaterOne) {
  auto doc = valid_document();
  doc["routes"].push_back(doc["routes"][0]);
  doc["routes"].push_back(doc["routes"][0]);
  EXPECT_THAT(problems_of(doc),
              ElementsAre("routes[1].name: duplicate route name (first used by routes[0])",
                          "routes[2].name: duplicate route name (first used by routes[0])"));
}

TEST(TrafficSectionsTest, RejectsPrefixWithoutLeadingSlash) {
  auto doc = valid_document();
  doc["routes"][0]["prefix"] = "api/users";
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(routes[0].prefix: must start with "/")"));
}

TEST(TrafficSectionsTest, RejectsPrefixesRequestsCouldNeverMatch) {
  // Requests are routed by their normalized path (docs/paths.md), so a prefix must be normal.
  auto doc = valid_document();
  doc["routes"][0]["prefix"] = "/api/./users";
  doc["routes"].push_back({{"name", "b"}, {"prefix", "/api//x"}, {"backend", "users"}});
  doc["routes"].push_back({{"name", "c"}, {"prefix", "/%61pi"}, {"backend", "users"}});
  doc["routes"].push_back({{"name", "d"}, {"prefix", "/../x"}, {"backend", "users"}});
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(R"(routes[0].prefix: must be a normalized path (did you mean "/api/users"?))",
                  R"(routes[1].prefix: must be a normalized path (did you mean "/api/x"?))",
                  R"(routes[2].prefix: must be a normalized path (did you mean "/api"?))",
                  "routes[3].prefix: must be a normalized path (docs/paths.md)"));
  // Without slash merging, a double slash is a normal path.
  doc = valid_document();
  doc["http"] = {{"merge_slashes", false}};
  doc["routes"][0]["prefix"] = "/api//x";
  EXPECT_THAT(problems_of(doc), IsEmpty());
}

TEST(TrafficSectionsTest, RejectsUnknownBackendAndPolicy) {
  auto doc = valid_document();
  doc["routes"][0]["backend"] = "orders";
  doc["routes"][0]["limit"] = "premium";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("routes[0].backend: no such backend", "routes[0].limit: no such policy"));
}

TEST(TrafficSectionsTest, ChecksReferencesEvenWhenTheTargetIsBroken) {
  auto doc = valid_document();
  doc["backends"]["users"]["balance"] = "fastest";
  doc["routes"][0]["limit"] = nullptr;
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          R"(backends.users.balance: must be one of "round_robin", "least_request", "random")"));
}

TEST(TrafficSectionsTest, SkipsBackendReferencesWhenBackendsIsMalformed) {
  auto doc = valid_document();
  doc["backends"] = Json::array();
  EXPECT_THAT(problems_of(doc), ElementsAre("backends: must be an object"));
  doc.erase("backends");
  EXPECT_THAT(problems_of(doc), ElementsAre("backends: is required"));
}

TEST(TrafficSectionsTest, RejectsMethodsThatAreNotUpperCaseTokens) {
  auto doc = valid_document();
  doc["routes"][0]["methods"] = {"GET", "post", "PUT IT", 1};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(R"(routes[0].methods[1]: not an HTTP method (use upper case, e.g. "GET"))",
                  R"(routes[0].methods[2]: not an HTTP method (use upper case, e.g. "GET"))",
                  "routes[0].methods[3]: must be a string"));
}

TEST(TrafficSectionsTest, ChecksNullableRouteFields) {
  auto doc = valid_document();
  doc["routes"][0]["methods"] = "GET";
  doc["routes"][0]["host"] = "";
  doc["routes"][0]["limit"] = 3;
  doc["routes"][0]["strip_prefix"] = "true";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("routes[0].limit: must be a string or null",
                          "routes[0].methods: must be an array or null",
                          "routes[0].host: must not be empty (use null for any host)",
                          "routes[0].strip_prefix: must be a boolean"));
}

TEST(TrafficSectionsTest, ParsesRouteFields) {
  auto doc = valid_document();
  doc["routes"][0] = {{"name", "api"},       {"prefix", "/"},      {"backend", "users"},
                      {"limit", nullptr},    {"methods", nullptr}, {"host", "api.example.com"},
                      {"strip_prefix", true}};
  const RouteConfig expected{"api", "/", "users", std::nullopt, {}, "api.example.com", true};
  EXPECT_THAT(parsed(doc).routes, ElementsAre(expected));
}

TEST(TrafficSectionsTest, RejectsRouteThatIsNotAnObject) {
  auto doc = valid_document();
  doc["routes"].push_back("users");
  doc["routes"].push_back(Json::array());
  EXPECT_THAT(problems_of(doc),
              ElementsAre("routes[1]: must be an object", "routes[2]: must be an object"));
  doc["routes"] = Json::object();
  EXPECT_THAT(problems_of(doc), ElementsAre("routes: must be an array"));
}

TEST(TrafficSectionsTest, AcceptsEmptyRouteTable) {
  auto doc = valid_document();
  doc["routes"] = Json::array();
  EXPECT_THAT(problems_of(doc), IsEmpty());
}

}  // namespace
}  // namespace sluice::config
