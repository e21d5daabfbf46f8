// SPDX-License-Identifier: Apache-2.0
// Validation of the server-side sections: listen, admin, http, access_log, identity, store.
#include "gateway/config/config_sections.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "gateway/config/config_json.hpp"
#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using test_support::parsed;
using test_support::problems_of;
using test_support::valid_document;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Json = nlohmann::json;

TEST(ServerSectionsTest, RejectsListenAddressThatIsNotAnIpLiteral) {
  auto doc = valid_document();
  doc["listen"] = {{"address", "localhost"}};
  EXPECT_THAT(problems_of(doc), ElementsAre("listen.address: must be an IPv4 or IPv6 address"));
}

TEST(ServerSectionsTest, AcceptsIpv6ListenAddressAndEphemeralPort) {
  auto doc = valid_document();
  doc["listen"] = {{"address", "::"}, {"port", 0}};
  const auto config = parsed(doc);
  ASSERT_EQ(config.listeners.size(), 1U);
  EXPECT_EQ(config.listeners[0].name, "default");
  EXPECT_EQ(config.listeners[0].address, "::");
  EXPECT_EQ(config.listeners[0].port, 0);
}

TEST(ServerSectionsTest, RejectsPortsOutsideTheirRange) {
  auto doc = valid_document();
  doc["listen"] = {{"port", 65536}};
  doc["admin"] = {{"port", -1}};
  EXPECT_THAT(problems_of(doc), ElementsAre("listen.port: must be between 0 and 65535",
                                            "admin.port: must be between 0 and 65535"));
}

TEST(ServerSectionsTest, RejectsWrongTypesWithTheExpectedType) {
  auto doc = valid_document();
  doc["listen"] = {{"address", 127}};
  doc["admin"] = {{"persist", "yes"}, {"token_env", 5}};
  doc["access_log"] = {{"enabled", 1}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre("listen.address: must be a string", "admin.token_env: must be a string or null",
                  "admin.persist: must be a boolean", "access_log.enabled: must be a boolean"));
}

TEST(ServerSectionsTest, RejectsTokenEnvThatIsNotAnEnvironmentVariableName) {
  auto doc = valid_document();
  doc["admin"] = {{"token_env", "1TOKEN"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("admin.token_env: must be an environment variable name (letters, "
                          "digits and _, not starting with a digit)"));
}

TEST(ServerSectionsTest, AcceptsNullTokenEnv) {
  auto doc = valid_document();
  doc["admin"] = {{"token_env", nullptr}, {"persist", true}};
  const auto config = parsed(doc);
  EXPECT_EQ(config.admin.token_env, std::nullopt);
  EXPECT_TRUE(config.admin.persist);
}

TEST(ServerSectionsTest, TopUsersIsOnUnlessTurnedOff) {
  auto doc = valid_document();
  EXPECT_TRUE(parsed(doc).admin.top_users);
  doc["admin"] = {{"top_users", false}};
  EXPECT_FALSE(parsed(doc).admin.top_users);
  doc["admin"] = {{"top_users", "off"}};
  EXPECT_THAT(problems_of(doc), ElementsAre("admin.top_users: must be a boolean"));
}

TEST(ServerSectionsTest, RefusesAnOpenAdminApiOnANonLoopbackAddress) {
  auto doc = valid_document();
  doc["admin"] = {{"address", "0.0.0.0"}, {"token_env", nullptr}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("admin.address: must be a loopback address while admin.token_env is "
                          "null (the admin API would be open to the network)"));
  doc["admin"] = {{"address", "10.1.2.3"}};  // absent token_env is null too
  EXPECT_THAT(problems_of(doc), ::testing::SizeIs(1));
  doc["admin"] = {{"address", "0.0.0.0"}, {"token_env", "SLUICE_ADMIN_TOKEN"}};
  EXPECT_THAT(problems_of(doc), IsEmpty());
  doc["admin"] = {{"address", "::1"}};
  EXPECT_THAT(problems_of(doc), IsEmpty());
}

TEST(ServerSectionsTest, ChecksHttpLimits) {
  auto doc = valid_document();
  doc["http"] = {{"max_header_bytes", 1023},
                 {"max_body_bytes", 1099511627777},
                 {"header_timeout_ms", 0},
                 {"idle_timeout_ms", 86400001},
                 {"max_connections", 0}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("http.max_header_bytes: must be between 1024 and 1048576",
                          "http.max_body_bytes: must be between 0 and 1099511627776",
                          "http.header_timeout_ms: must be between 1 and 3600000",
                          "http.idle_timeout_ms: must be between 1 and 86400000",
                          "http.max_connections: must be between 1 and 1000000"));
}

TEST(ServerSectionsTest, AcceptsHttpLimitsAtTheirBounds) {
  auto doc = valid_document();
  doc["http"] = {{"max_header_bytes", 1048576},
                 {"max_body_bytes", 1099511627776},
                 {"header_timeout_ms", 1},
                 {"idle_timeout_ms", 86400000},
                 {"max_connections", 1000000}};
  const auto config = parsed(doc);
  EXPECT_EQ(config.http.max_body_bytes, 1099511627776U);
  EXPECT_EQ(config.http.idle_timeout, 86400000ms);
}

TEST(ServerSectionsTest, ParsesTrustedProxies) {
  auto doc = valid_document();
  doc["http"] = {{"trusted_proxies", {"10.0.0.0/8", "::1", "192.168.1.7"}}};
  const auto config = parsed(doc);
  ASSERT_EQ(config.http.trusted_proxies.size(), 3U);
  EXPECT_EQ(to_string(config.http.trusted_proxies[0]), "10.0.0.0/8");
  EXPECT_EQ(to_string(config.http.trusted_proxies[1]), "::1/128");
  EXPECT_EQ(to_string(config.http.trusted_proxies[2]), "192.168.1.7/32");
}

TEST(ServerSectionsTest, ReportsBadTrustedProxiesAtTheirIndex) {
  auto doc = valid_document();
  doc["http"] = {{"trusted_proxies", {"10.0.0.0/8", "10.0.0.0/33", "10.0.0.1/8", 7, "proxy"}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("http.trusted_proxies[1]: not an IP address or CIDR",
                          "http.trusted_proxies[2]: host bits set; did you mean 10.0.0.0/8?",
                          "http.trusted_proxies[3]: must be a string",
                          "http.trusted_proxies[4]: not an IP address or CIDR"));
}

TEST(ServerSectionsTest, RejectsTrustedProxiesThatAreNotAnArray) {
  auto doc = valid_document();
  doc["http"] = {{"trusted_proxies", "10.0.0.0/8"}};
  EXPECT_THAT(problems_of(doc), ElementsAre("http.trusted_proxies: must be an array"));
}

TEST(ServerSectionsTest, RejectsEmptyAccessLogPath) {
  auto doc = valid_document();
  doc["access_log"] = {{"path", ""}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(access_log.path: must not be empty (use "-" for stdout))"));
}

TEST(ServerSectionsTest, ChecksTheUserHashKeyVariable) {
  auto doc = valid_document();
  doc["access_log"] = {{"user_hash_key_env", "1X"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("access_log.user_hash_key_env: must be an environment variable name "
                          "(letters, digits and _, not starting with a digit)"));
  doc["access_log"] = {{"user_hash_key_env", 7}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("access_log.user_hash_key_env: must be a string or null"));
  doc["access_log"] = {{"user_hash_key_env", nullptr}};
  EXPECT_FALSE(parsed(doc).access_log.user_hash_key_env);
  doc["access_log"] = {{"user_hash_key_env", "SLUICE_USER_HASH_KEY"}};
  EXPECT_EQ(parsed(doc).access_log.user_hash_key_env, "SLUICE_USER_HASH_KEY");
}

TEST(ServerSectionsTest, MergeSlashesDefaultsToTrue) {
  auto doc = valid_document();
  EXPECT_TRUE(parsed(doc).http.merge_slashes);
  doc["http"] = {{"merge_slashes", false}};
  EXPECT_FALSE(parsed(doc).http.merge_slashes);
  doc["http"] = {{"merge_slashes", "no"}};
  EXPECT_THAT(problems_of(doc), ElementsAre("http.merge_slashes: must be a boolean"));
}

TEST(ServerSectionsTest, TunnelTimeoutRequestIdPolicyAndRouteUpgrades) {
  auto doc = valid_document();
  const Config defaults = parsed(doc);
  EXPECT_EQ(defaults.http.tunnel_idle_timeout, std::chrono::milliseconds(300000));
  EXPECT_EQ(defaults.http.request_id, RequestIdPolicy::kPreserve);
  EXPECT_TRUE(defaults.routes.at(0).upgrades);
  doc["http"] = {{"tunnel_idle_timeout_ms", 2500}, {"request_id", "trusted"}};
  doc["routes"][0]["upgrades"] = false;
  const Config set = parsed(doc);
  EXPECT_EQ(set.http.tunnel_idle_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(set.http.request_id, RequestIdPolicy::kTrusted);
  EXPECT_FALSE(set.routes.at(0).upgrades);
  doc["http"] = {{"tunnel_idle_timeout_ms", 0}, {"request_id", "keep"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("http.tunnel_idle_timeout_ms: must be between 1 and 86400000",
                          R"(http.request_id: must be one of "preserve", "trusted", "replace")"));
}

TEST(ServerSectionsTest, ParsesIdentitySourcesInOrder) {
  auto doc = valid_document();
  doc["identity"] = Json::parse(R"([{"bearer": true}, {"header": "X-User"}])");
  using Kind = IdentitySource::Kind;
  EXPECT_THAT(parsed(doc).identity, ElementsAre(IdentitySource{Kind::kBearer, ""},
                                                IdentitySource{Kind::kHeader, "X-User"}));
}

TEST(ServerSectionsTest, RejectsEmptyIdentity) {
  auto doc = valid_document();
  doc["identity"] = Json::array();
  EXPECT_THAT(problems_of(doc), ElementsAre("identity: must name at least one source"));
}

TEST(ServerSectionsTest, RejectsIdentitySourceWithZeroOrSeveralKinds) {
  auto doc = valid_document();
  doc["identity"] = Json::parse(R"([{"header": "X-A", "bearer": true}, {}, "client_ip"])");
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          R"(identity[0]: must have exactly one of "header", "bearer", "client_ip", "client_cert", )"
          R"("jwt", "api_key")",
          R"(identity[1]: must have exactly one of "header", "bearer", "client_ip", "client_cert", )"
          R"("jwt", "api_key")",
          "identity[2]: must be an object"));
}

TEST(ServerSectionsTest, ReportsUnknownKeysInIdentitySources) {
  auto doc = valid_document();
  doc["identity"] = Json::parse(R"([{"bearer": true, "scheme": "Token"}, {"cookie": "sid"}])");
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          "identity[0].scheme: unknown field",
          R"(identity[1]: must have exactly one of "header", "bearer", "client_ip", "client_cert", )"
          R"("jwt", "api_key")",
          "identity[1].cookie: unknown field"));
}

TEST(ServerSectionsTest, RejectsDisabledIdentitySource) {
  auto doc = valid_document();
  doc["identity"] = Json::parse(R"([{"bearer": false}, {"client_ip": "yes"}])");
  EXPECT_THAT(problems_of(doc),
              ElementsAre("identity[0].bearer: must be true (remove the source to disable it)",
                          "identity[1].client_ip: must be a boolean"));
}

TEST(ServerSectionsTest, RejectsHeaderSourceThatIsNotAHeaderName) {
  auto doc = valid_document();
  doc["identity"] = Json::parse(R"([{"header": "X API Key"}, {"header": ""}])");
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(identity[0].header: must be an HTTP header name (e.g. "X-API-Key"))",
                          R"(identity[1].header: must be an HTTP header name (e.g. "X-API-Key"))"));
}

TEST(ServerSectionsTest, RejectsDuplicateIdentitySources) {
  auto doc = valid_document();
  doc["identity"] = Json::parse(
      R"([{"header": "X-API-Key"}, {"client_ip": true}, {"header": "x-api-key"},
          {"client_ip": true}])");
  EXPECT_THAT(problems_of(doc), ElementsAre("identity[2]: duplicate identity source",
                                            "identity[3]: duplicate identity source"));
}

TEST(ServerSectionsTest, RejectsUnknownStoreType) {
  auto doc = valid_document();
  doc["store"] = {{"type", "memcached"}};
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(store.type: must be one of "memory", "redis")"));
  doc["store"] = {{"type", 1}};
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(store.type: must be one of "memory", "redis")"));
}

TEST(ServerSectionsTest, RejectsRedisFieldsWithTheMemoryStore) {
  auto doc = valid_document();
  doc["store"] = {{"host", "10.0.0.5"}, {"on_error", "deny"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(store.host: only valid when store.type is "redis")",
                          R"(store.on_error: only valid when store.type is "redis")"));
}

TEST(ServerSectionsTest, ParsesRedisStoreWithDefaults) {
  auto doc = valid_document();
  doc["store"] = {{"type", "redis"}, {"host", "redis.internal"}, {"password_env", "REDIS_PW"}};
  const auto store = parsed(doc).store;
  EXPECT_EQ(store.type, StoreType::kRedis);
  EXPECT_EQ(store.max_keys, 1000000U);
  EXPECT_EQ(store.redis.host, "redis.internal");
  EXPECT_EQ(store.redis.port, 6379);
  EXPECT_EQ(store.redis.password_env, "REDIS_PW");
  EXPECT_EQ(store.redis.timeout, 50ms);
  EXPECT_EQ(store.redis.on_error, OnError::kLocalShare);
  EXPECT_EQ(store.redis.mode, StoreMode::kExact);
  EXPECT_EQ(store.redis.sync, 100ms);
}

TEST(ServerSectionsTest, ParsesTheHybridModeAndItsSyncPeriod) {
  auto doc = valid_document();
  doc["store"] = {{"type", "redis"}, {"mode", "hybrid"}, {"sync_ms", 250}};
  const auto store = parsed(doc).store;
  EXPECT_EQ(store.redis.mode, StoreMode::kHybrid);
  EXPECT_EQ(store.redis.sync, 250ms);
  doc["store"] = {{"type", "redis"}, {"mode", "eventual"}, {"sync_ms", 1}};
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(store.mode: must be one of "exact", "hybrid")",
                                            "store.sync_ms: must be between 2 and 60000"));
  doc["store"] = {{"mode", "hybrid"}, {"sync_ms", 100}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(store.mode: only valid when store.type is "redis")",
                          R"(store.sync_ms: only valid when store.type is "redis")"));
}

TEST(ServerSectionsTest, ChecksRedisFields) {
  auto doc = valid_document();
  doc["store"] = {{"type", "redis"},    {"max_keys", 0},         {"host", "not a host"},
                  {"port", 0},          {"password_env", "A-B"}, {"timeout_ms", 60001},
                  {"on_error", "retry"}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre("store.max_keys: must be between 1 and 1000000000",
                  "store.host: must be an IP address or host name",
                  "store.port: must be between 1 and 65535",
                  "store.password_env: must be an environment variable name (letters, digits "
                  "and _, not starting with a digit)",
                  "store.timeout_ms: must be between 1 and 60000",
                  R"(store.on_error: must be one of "local", "local_share", "allow", "deny")"));
}

TEST(ServerSectionsTest, ChecksRedisFieldsEvenWhenTheTypeIsBad) {
  auto doc = valid_document();
  doc["store"] = {{"type", "Redis"}, {"port", 6379}, {"timeout_ms", 0}};
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(store.type: must be one of "memory", "redis")",
                                            "store.timeout_ms: must be between 1 and 60000"));
}

TEST(ServerSectionsTest, SharedNameRules) {
  EXPECT_TRUE(detail::is_valid_name("partner-42_x"));
  EXPECT_TRUE(detail::is_valid_name(std::string(64, 'a')));
  EXPECT_FALSE(detail::is_valid_name(std::string(65, 'a')));
  EXPECT_FALSE(detail::is_valid_name(""));
  EXPECT_FALSE(detail::is_valid_name("a.b"));
  EXPECT_TRUE(detail::is_http_token("M-SEARCH"));
  EXPECT_FALSE(detail::is_http_token("X:Y"));
  EXPECT_TRUE(detail::is_env_name("_A1"));
  EXPECT_FALSE(detail::is_env_name("9A"));
  EXPECT_THAT(problems_of(valid_document()), IsEmpty());
}

}  // namespace
}  // namespace sluice::config

namespace sluice::config {
namespace {

// docs/fleet.md: the fleet needs the store's Redis; its fields are checked like any other.
TEST(FleetSectionTest, DefaultsToOffAndParsesEveryField) {
  EXPECT_EQ(parsed(valid_document()).fleet, FleetConfig{});
  auto doc = valid_document();
  doc["store"] = {{"type", "redis"}};
  doc["fleet"] = {{"enabled", true},
                  {"name", "prod-eu"},
                  {"replica_id", "pod-1"},
                  {"sync_timeout_ms", 500},
                  {"heartbeat_ms", 250}};
  const FleetConfig fleet = parsed(doc).fleet;
  EXPECT_TRUE(fleet.enabled);
  EXPECT_EQ(fleet.name, "prod-eu");
  EXPECT_EQ(fleet.replica_id, "pod-1");
  EXPECT_EQ(fleet.sync_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(fleet.heartbeat, std::chrono::milliseconds(250));
}

TEST(FleetSectionTest, NeedsARedisStoreAndValidNames) {
  auto doc = valid_document();
  doc["fleet"] = {{"enabled", true}, {"name", "two words"}, {"heartbeat_ms", 10}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          "fleet.name: must be 1-64 letters, digits, '-' or '_'",
          "fleet.heartbeat_ms: must be between 100 and 60000",
          R"(fleet.enabled: needs store.type "redis" (the fleet shares the store's Redis))"));
  doc["fleet"] = {{"enabled", false}, {"replica_id", ""}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("fleet.replica_id: must be 1-64 letters, digits, '-' or '_'"));
}

TEST(FleetSectionTest, ConfigWatchIsABooleanOffByDefault) {
  EXPECT_FALSE(parsed(valid_document()).config_watch);
  auto doc = valid_document();
  doc["config_watch"] = true;
  EXPECT_TRUE(parsed(doc).config_watch);
  doc["config_watch"] = "yes";
  EXPECT_THAT(problems_of(doc), ElementsAre("config_watch: must be a boolean"));
  doc.erase("config_watch");
  EXPECT_THAT(problems_of(doc), IsEmpty());
}

}  // namespace
}  // namespace sluice::config
