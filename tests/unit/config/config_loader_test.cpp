// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/config_loader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using test_support::problem_lines;
using test_support::problems_of;
using test_support::valid_document;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The example of docs/behaviour.md "Configuration", less the two fields that default
// (http.merge_slashes, access_log.user_hash_key_env).
constexpr std::string_view kSpecExample = R"({
  "listen": {"address": "0.0.0.0", "port": 8080},
  "admin":  {"address": "127.0.0.1", "port": 9901, "token_env": "SLUICE_ADMIN_TOKEN", "persist": true},
  "threads": 0,
  "drain_timeout_ms": 10000,
  "http": {"max_header_bytes": 16384, "max_body_bytes": 10485760,
           "header_timeout_ms": 10000, "idle_timeout_ms": 60000,
           "max_connections": 10000, "trusted_proxies": ["127.0.0.1/32"]},
  "access_log": {"enabled": true, "path": "-"},
  "identity": [{"header": "X-API-Key"}, {"bearer": true}, {"client_ip": true}],
  "store": {"type": "memory", "max_keys": 1000000},
  "limits": {
    "standard": {"requests": 100, "window_ms": 60000, "buckets": 60, "mode": "enforce"},
    "login":    {"requests": 5,   "window_ms": 60000, "buckets": 12, "mode": "shadow"}
  },
  "overrides": {"standard": {"partner-42": {"requests": 5000}}},
  "backends": {
    "users": {
      "endpoints": ["127.0.0.1:9001", "127.0.0.1:9002"],
      "balance": "round_robin",
      "connect_timeout_ms": 1000, "timeout_ms": 15000,
      "max_idle_per_endpoint": 64,
      "breaker": {"enabled": true, "k": 1.5, "protection": 5,
                  "window_ms": 10000, "buckets": 40,
                  "failure_statuses": [500, 502, 503, 504]}
    }
  },
  "routes": [
    {"name": "users", "prefix": "/api/users", "backend": "users",
     "limit": "standard", "methods": ["GET", "POST"], "host": null, "strip_prefix": false}
  ]
})";

// A file in the test's temporary directory, removed at scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& contents)
      : path_(std::filesystem::temp_directory_path() /
              ("sluice_config_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json")) {
    std::ofstream(path_) << contents;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(ConfigLoaderTest, AcceptsTheSmallValidDocument) {
  EXPECT_THAT(problems_of(valid_document()), IsEmpty());
}

TEST(ConfigLoaderTest, AppliesDefaultsToMinimalDocument) {
  const auto result = parse_config_text(
      R"({"backends": {"users": {"endpoints": ["127.0.0.1:9001"]}}, "routes": []})");
  ASSERT_TRUE(result.ok()) << ::testing::PrintToString(problem_lines(result));
  const Config& c = *result.config;
  ASSERT_EQ(c.listeners.size(), 1U);
  EXPECT_EQ(c.listeners[0].name, "default");
  EXPECT_EQ(c.listeners[0].address, "0.0.0.0");
  EXPECT_EQ(c.listeners[0].port, 8080);
  EXPECT_EQ(c.admin.address, "127.0.0.1");
  EXPECT_EQ(c.admin.port, 9901);
  EXPECT_EQ(c.admin.token_env, std::nullopt);
  EXPECT_FALSE(c.admin.persist);
  EXPECT_EQ(c.threads, 0U);
  EXPECT_EQ(c.drain_timeout, 10000ms);
  EXPECT_EQ(c.http.max_header_bytes, 16384U);
  EXPECT_EQ(c.http.max_body_bytes, 10485760U);
  EXPECT_EQ(c.http.header_timeout, 10000ms);
  EXPECT_EQ(c.http.idle_timeout, 60000ms);
  EXPECT_EQ(c.http.max_connections, 10000U);
  EXPECT_THAT(c.http.trusted_proxies, IsEmpty());
  EXPECT_TRUE(c.access_log.enabled);
  EXPECT_EQ(c.access_log.path, "-");
  EXPECT_THAT(c.identity, ElementsAre(IdentitySource{IdentitySource::Kind::kClientIp, ""}));
  EXPECT_EQ(c.store.type, StoreType::kMemory);
  EXPECT_EQ(c.store.max_keys, 1000000U);
  EXPECT_EQ(c.store.redis, RedisConfig{});
  EXPECT_THAT(c.limits, IsEmpty());
  EXPECT_THAT(c.overrides, IsEmpty());
  EXPECT_THAT(c.routes, IsEmpty());
  ASSERT_EQ(c.backends.count("users"), 1U);
  const BackendConfig& users = c.backends.at("users");
  EXPECT_THAT(users.endpoints, ElementsAre(Endpoint{"127.0.0.1", 9001}));
  EXPECT_EQ(users.balance, Balance::kRoundRobin);
  EXPECT_EQ(users.connect_timeout, 1000ms);
  EXPECT_EQ(users.timeout, 15000ms);
  EXPECT_EQ(users.max_idle_per_endpoint, 64U);
  EXPECT_TRUE(users.breaker.enabled);
  EXPECT_DOUBLE_EQ(users.breaker.k, 1.5);
  EXPECT_DOUBLE_EQ(users.breaker.protection, 5.0);
  EXPECT_EQ(users.breaker.window, 10000ms);
  EXPECT_EQ(users.breaker.buckets, 40U);
  EXPECT_THAT(users.breaker.failure_statuses, ElementsAre(500, 502, 503, 504));
}

TEST(ConfigLoaderTest, AppliesDefaultsInsideRoutesAndPolicies) {
  const auto result = parse_config(valid_document());
  ASSERT_TRUE(result.ok());
  const auto& policy = result.config->limits.at("standard");
  EXPECT_EQ(policy.buckets, 10U);
  EXPECT_EQ(policy.mode, LimitMode::kEnforce);
  const auto& route = result.config->routes.at(0);
  EXPECT_THAT(route.methods, IsEmpty());
  EXPECT_EQ(route.host, std::nullopt);
  EXPECT_FALSE(route.strip_prefix);
}

TEST(ConfigLoaderTest, ParsesTheSpecExample) {
  const auto result = parse_config_text(kSpecExample);
  ASSERT_TRUE(result.ok()) << ::testing::PrintToString(problem_lines(result));
  const Config& c = *result.config;
  EXPECT_EQ(c.admin.token_env, "SLUICE_ADMIN_TOKEN");
  EXPECT_TRUE(c.admin.persist);
  EXPECT_THAT(c.http.trusted_proxies,
              ElementsAre(Cidr{boost::asio::ip::make_address("127.0.0.1"), 32}));
  using Kind = IdentitySource::Kind;
  EXPECT_THAT(c.identity,
              ElementsAre(IdentitySource{Kind::kHeader, "X-API-Key"},
                          IdentitySource{Kind::kBearer, ""}, IdentitySource{Kind::kClientIp, ""}));
  EXPECT_EQ(c.limits.at("standard"), (LimitPolicyConfig{100, 60000ms, 60, LimitMode::kEnforce}));
  EXPECT_EQ(c.limits.at("login"), (LimitPolicyConfig{5, 60000ms, 12, LimitMode::kShadow}));
  EXPECT_EQ(c.overrides.at("standard").at("partner-42"), 5000U);
  EXPECT_THAT(c.backends.at("users").endpoints,
              ElementsAre(Endpoint{"127.0.0.1", 9001}, Endpoint{"127.0.0.1", 9002}));
  EXPECT_EQ(c.backends.at("users").breaker, BreakerConfig{});
  ASSERT_EQ(c.routes.size(), 1U);
  const RouteConfig expected{"users",         "/api/users", "users", "standard",
                             {"GET", "POST"}, std::nullopt, false};
  EXPECT_EQ(c.routes[0], expected);
}

TEST(ConfigLoaderTest, LoadsTheShippedConfigWithoutProblems) {
  const auto result = load_config_file(SLUICE_SOURCE_DIR "/conf/sluice.json");
  ASSERT_THAT(problem_lines(result), IsEmpty());
  const Config& c = *result.config;
  EXPECT_EQ(c.admin.token_env, "SLUICE_ADMIN_TOKEN");
  EXPECT_FALSE(c.admin.persist);
  ASSERT_EQ(c.routes.size(), 4U);
  EXPECT_EQ(c.routes[1].name, "login");
  EXPECT_EQ(c.routes[1].limit, "login");
  EXPECT_THAT(c.routes[1].methods, ElementsAre("POST"));
  EXPECT_EQ(c.routes[2].name, "demo");  // what `dev.sh run` curls: /demo/ok -> /ok
  EXPECT_TRUE(c.routes[2].strip_prefix);
  EXPECT_EQ(c.routes[3].name, "overload");  // `dev.sh run`'s adaptive concurrency demo
  ASSERT_TRUE(c.backends.at("overload").concurrency);
  EXPECT_TRUE(c.backends.at("overload").concurrency->enabled);
}

TEST(ConfigLoaderTest, LoadsAFileFromDisk) {
  const TempFile file(valid_document().dump());
  const auto result = load_config_file(file.path());
  EXPECT_TRUE(result.ok()) << ::testing::PrintToString(problem_lines(result));
}

TEST(ConfigLoaderTest, ReportsUnreadableFileWithItsPath) {
  const std::string path = "/nonexistent/sluice/config.json";
  EXPECT_THAT(problem_lines(load_config_file(path)),
              ElementsAre(path + ": cannot read: No such file or directory"));
}

TEST(ConfigLoaderTest, ReportsDirectoryAsUnreadable) {
  const auto dir = std::filesystem::temp_directory_path();
  EXPECT_THAT(problem_lines(load_config_file(dir)),
              ElementsAre(dir.string() + ": cannot read: Is a directory"));
}

TEST(ConfigLoaderTest, ReportsInvalidJsonWithLineAndColumn) {
  const auto lines = problem_lines(parse_config_text("{\n  \"threads\": 1,\n  oops\n}"));
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_THAT(lines[0], ::testing::StartsWith("(root): invalid JSON at line 3, column 3: "));
  EXPECT_THAT(lines[0], ::testing::HasSubstr("syntax error"));
  EXPECT_THAT(lines[0], ::testing::Not(::testing::HasSubstr("json.exception")));
}

TEST(ConfigLoaderTest, ReportsTruncatedJsonAtItsEnd) {
  EXPECT_THAT(problem_lines(parse_config_text("{\"routes\": [")),
              ElementsAre(::testing::StartsWith("(root): invalid JSON at line 1, column 13: ")));
  EXPECT_THAT(problem_lines(parse_config_text("")),
              ElementsAre(::testing::StartsWith("(root): invalid JSON at line 1, column 1: ")));
}

TEST(ConfigLoaderTest, ReportsInvalidJsonInAFile) {
  const TempFile file("{\"routes\": [],\n\"backends\": {,}}");
  EXPECT_THAT(problem_lines(load_config_file(file.path())),
              ElementsAre(::testing::StartsWith("(root): invalid JSON at line 2, column 14: ")));
}

TEST(ConfigLoaderTest, ReportsDuplicateKeysWithTheirPaths) {
  const auto text = R"({
    "limits": {"standard": {"requests": 1, "window_ms": 1000},
               "standard": {"requests": 2, "window_ms": 1000}},
    "backends": {"users": {"endpoints": ["127.0.0.1:9001"]}},
    "routes": [{"name": "a", "prefix": "/", "backend": "users"},
               {"name": "b", "prefix": "/b", "backend": "users", "prefix": "/c"}],
    "threads": 1, "threads": 2
  })";
  EXPECT_THAT(problem_lines(parse_config_text(text)),
              ElementsAre("limits.standard: duplicate key", "routes[1].prefix: duplicate key",
                          "threads: duplicate key"));
}

TEST(ConfigLoaderTest, ReportsDuplicateKeysBeforeOtherProblems) {
  const auto text = R"({"backends": {}, "routes": [{"name": "a", "name": "a"}],
                        "x": [1, [2, {"k": 1, "k": 2}]]})";
  EXPECT_THAT(problem_lines(parse_config_text(text)),
              ElementsAre("routes[0].name: duplicate key", "x[1][1].k: duplicate key",
                          "routes[0].prefix: is required", "routes[0].backend: is required",
                          "x: unknown field"));
}

TEST(ConfigLoaderTest, RejectsDocumentThatIsNotAnObject) {
  EXPECT_THAT(problems_of(nlohmann::json::array()), ElementsAre("(root): must be an object"));
  EXPECT_THAT(problem_lines(parse_config_text("42")), ElementsAre("(root): must be an object"));
}

TEST(ConfigLoaderTest, ReportsMissingRequiredSections) {
  EXPECT_THAT(problems_of(nlohmann::json::object()),
              ElementsAre("backends: is required", "routes: is required"));
}

TEST(ConfigLoaderTest, ReportsUnknownTopLevelField) {
  auto doc = valid_document();
  doc["limit"] = nlohmann::json::object();
  EXPECT_THAT(problems_of(doc), ElementsAre("limit: unknown field"));
}

TEST(ConfigLoaderTest, ReportsUnknownFieldWithItsPath) {
  auto doc = valid_document();
  doc["backends"]["users"]["breaker"] = {{"enabled", true}, {"windw_ms", 1000}};
  EXPECT_THAT(problems_of(doc), ElementsAre("backends.users.breaker.windw_ms: unknown field"));
}

TEST(ConfigLoaderTest, ReportsWrongTypedSectionOnceWithoutExaminingIt) {
  auto doc = valid_document();
  doc["http"] = nlohmann::json::array({1, 2});
  EXPECT_THAT(problems_of(doc), ElementsAre("http: must be an object"));
}

TEST(ConfigLoaderTest, ReportsFloatWhereAnIntegerIsRequired) {
  auto doc = valid_document();
  doc["threads"] = 1.5;
  EXPECT_THAT(problems_of(doc), ElementsAre("threads: must be an integer"));
  doc["threads"] = 4.0;
  EXPECT_THAT(problems_of(doc), ElementsAre("threads: must be an integer"));
}

TEST(ConfigLoaderTest, ReportsIntegersOutOfRange) {
  auto doc = valid_document();
  doc["threads"] = 1025;
  doc["drain_timeout_ms"] = -1;
  EXPECT_THAT(problems_of(doc), ElementsAre("threads: must be between 0 and 1024",
                                            "drain_timeout_ms: must be between 0 and 3600000"));
}

TEST(ConfigLoaderTest, ReportsHugeIntegersAsOutOfRange) {
  auto doc = valid_document();
  doc["threads"] = std::numeric_limits<std::uint64_t>::max();
  EXPECT_THAT(problems_of(doc), ElementsAre("threads: must be between 0 and 1024"));
  doc["threads"] = std::numeric_limits<std::int64_t>::min();
  EXPECT_THAT(problems_of(doc), ElementsAre("threads: must be between 0 and 1024"));
}

TEST(ConfigLoaderTest, QuotesKeysThatAreNotPlainIdentifiers) {
  auto doc = valid_document();
  doc["overrides"] = {{"standard", {{"a.b", {{"requests", "many"}}}}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(overrides.standard["a.b"].requests: must be an integer)"));
}

TEST(ConfigLoaderTest, ReportsEveryProblemAtOnceInSchemaOrder) {
  auto doc = valid_document();
  doc["listen"]["port"] = 70000;
  doc["threads"] = "four";
  doc["identity"] = nlohmann::json::array();
  doc["limits"]["standard"]["buckets"] = 7;
  doc["backends"]["users"]["endpoints"].push_back("127.0.0.1");
  doc["routes"][0]["backend"] = "orders";
  doc["routes"][0]["colour"] = "blue";
  doc["extra"] = true;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("listen.port: must be between 0 and 65535", "threads: must be an integer",
                          "identity: must name at least one source",
                          "limits.standard.buckets: must divide window_ms (60000) evenly",
                          "backends.users.endpoints[1]: must be host:port (e.g. 127.0.0.1:9001)",
                          "routes[0].backend: no such backend", "routes[0].colour: unknown field",
                          "extra: unknown field"));
}

TEST(ConfigLoaderTest, ParseConfigTextMatchesParseConfig) {
  const auto from_text = parse_config_text(valid_document().dump());
  const auto from_json = parse_config(valid_document());
  ASSERT_TRUE(from_text.ok());
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(*from_text.config, *from_json.config);
}

TEST(ConfigLoaderTest, EnumerationsPrintTheirJsonSpelling) {
  EXPECT_EQ(to_string(Balance::kLeastRequest), "least_request");
  EXPECT_EQ(to_string(LimitMode::kShadow), "shadow");
  EXPECT_EQ(to_string(StoreType::kRedis), "redis");
  EXPECT_EQ(to_string(OnError::kLocalShare), "local_share");
}

// The ordered entry point reads `overrides` in place when every entry is valid; whatever the
// section holds, it must give what the nlohmann::json one gives: the same Config, or the same
// problems in the same order.
TEST(ConfigLoaderTest, AnOrderedDocumentGivesWhatTheSameDocumentUnorderedGives) {
  const std::vector<std::string> sections = {
      R"({"standard": {"partner-42": {"requests": 5000}, "abuser": {"requests": 0}}})",
      R"({"standard": {"top": {"requests": 4294967295}, "z": {"requests": 1}, "a": {"requests": 2}}})",
      R"({"standard": {}})",
      R"({})",
      R"({"standard": {"k": {"requests": 4294967296}}})",
      R"({"standard": {"k": {"requests": -1}}})",
      R"({"standard": {"k": {"requests": 1.5}}})",
      R"({"standard": {"k": {"requests": "7"}}})",
      R"({"standard": {"k": {"requests": 1, "window_ms": 5}}})",
      R"({"standard": {"k": {}}})",
      R"({"standard": {"k": 7}})",
      R"({"standard": {"": {"requests": 1}}})",
      R"({"standard": []})",
      R"({"premium": {"k": {"requests": 1}}})",
      R"({"premium": {}, "standard": {"k": {"requests": 3}}})",
      R"([])",
  };
  for (const auto& section : sections) {
    SCOPED_TRACE(section);
    auto ordered = nlohmann::ordered_json(test_support::valid_document());
    ordered["overrides"] = nlohmann::ordered_json::parse(section);
    const auto from_ordered = parse_config(ordered);
    const auto from_unordered = parse_config(nlohmann::json(ordered));
    EXPECT_EQ(test_support::problem_lines(from_ordered),
              test_support::problem_lines(from_unordered));
    ASSERT_EQ(from_ordered.ok(), from_unordered.ok());
    if (from_ordered.ok()) {
      EXPECT_TRUE(*from_ordered.config == *from_unordered.config);
    }
  }
  auto without = nlohmann::ordered_json(test_support::valid_document());
  without["threads"] = "many";  // no overrides at all, and a problem elsewhere
  EXPECT_EQ(test_support::problem_lines(parse_config(without)),
            test_support::problem_lines(parse_config(nlohmann::json(without))));
  // The plain read keeps the values: the same as the unordered read, checked by value too.
  auto plain = nlohmann::ordered_json(test_support::valid_document());
  plain["overrides"] = {{"standard", {{"b", {{"requests", 2}}}, {"a", {{"requests", 1}}}}}};
  const auto result = parse_config(plain);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.config->overrides.at("standard").at("a"), 1U);
  EXPECT_EQ(result.config->overrides.at("standard").at("b"), 2U);
}

}  // namespace
}  // namespace sluice::config
