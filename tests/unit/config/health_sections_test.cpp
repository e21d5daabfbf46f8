// SPDX-License-Identifier: Apache-2.0
// A backend's `health_check`, `outlier` and `retry` objects (docs/endpoint-health.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/config/config_sections.hpp"
#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using test_support::parsed;
using test_support::problems_of;
using test_support::valid_document;
using ::testing::ElementsAre;
using Json = nlohmann::json;

/// A `retry` object as its parser reads it (the loader refuses the section for now).
RetryConfig retry_of(const Json& object, std::vector<std::string>* problems = nullptr) {
  Problems found;
  RetryConfig retry;
  {
    ObjectReader reader(object, "retry", found);
    retry = detail::parse_retry(reader);
    reader.finish();
  }
  if (problems != nullptr) {
    for (const auto& p : found.list()) {
      problems->push_back(to_string(p));
    }
  }
  return retry;
}

TEST(HealthSectionsTest, AllThreeAreOffWhenAbsent) {
  const Config config = parsed(valid_document());
  const auto& users = config.backends.at("users");
  EXPECT_FALSE(users.health_check);
  EXPECT_FALSE(users.outlier);
  EXPECT_FALSE(users.retry);
}

TEST(HealthSectionsTest, EmptyObjectsTakeTheDefaults) {
  auto doc = valid_document();
  doc["backends"]["users"]["health_check"] = Json::object();
  doc["backends"]["users"]["outlier"] = Json::object();
  const Config config = parsed(doc);
  const auto& users = config.backends.at("users");
  EXPECT_EQ(users.health_check, HealthCheckConfig{});
  EXPECT_EQ(users.health_check->path, "/healthz");
  EXPECT_EQ(users.health_check->interval, 5000ms);
  EXPECT_EQ(users.outlier, OutlierConfig{});
  EXPECT_EQ(users.outlier->max_ejection_percent, 50U);
  const RetryConfig retry = retry_of(Json::object());
  EXPECT_EQ(retry, RetryConfig{});
  EXPECT_EQ(retry.on_statuses, (std::vector<int>{502, 503, 504}));
  EXPECT_TRUE(retry.on_connect_error && retry.on_reset && retry.on_timeout);
}

TEST(HealthSectionsTest, ParsesTheSpecExample) {
  auto doc = valid_document();
  doc["backends"]["users"]["health_check"] = Json::parse(R"({"path": "/ready",
      "interval_ms": 2000, "timeout_ms": 500, "healthy_threshold": 1, "unhealthy_threshold": 2,
      "expected_statuses": [200, 204]})");
  doc["backends"]["users"]["outlier"] = Json::parse(
      R"({"consecutive_failures": 3, "base_ejection_ms": 10000, "max_ejection_percent": 34})");
  const Config config = parsed(doc);
  const auto& users = config.backends.at("users");
  EXPECT_EQ(users.health_check,
            (HealthCheckConfig{
                "/ready", 2000ms, 500ms, 1, 2, {200, 204}, HealthCheckConfig::Type::kHttp, ""}));
  EXPECT_EQ(users.outlier, (OutlierConfig{3, 10000ms, 34}));
  EXPECT_EQ(retry_of(Json::parse(R"({"attempts": 3, "on": ["reset", 503], "backoff_ms": 10,
                 "budget_percent": 25, "min_retry_concurrency": 1, "non_idempotent": true})")),
            (RetryConfig{3, false, true, false, {503}, 10ms, 25, 1, true}));
}

TEST(HealthSectionsTest, ReportsEveryBadField) {
  auto doc = valid_document();
  doc["backends"]["users"]["health_check"] = Json::parse(R"({"path": "healthz",
      "interval_ms": 50, "timeout_ms": 0, "healthy_threshold": 0, "unhealthy_threshold": 101,
      "expected_statuses": [99]})");
  doc["backends"]["users"]["outlier"] = Json::parse(
      R"({"consecutive_failures": 0, "base_ejection_ms": 0, "max_ejection_percent": 101})");
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          "backends.users.health_check.path: must start with \"/\" and hold printable ASCII "
          "without spaces",
          "backends.users.health_check.interval_ms: must be between 100 and 3600000",
          "backends.users.health_check.timeout_ms: must be between 1 and 600000",
          "backends.users.health_check.healthy_threshold: must be between 1 and 100",
          "backends.users.health_check.unhealthy_threshold: must be between 1 and 100",
          "backends.users.health_check.expected_statuses[0]: must be between 100 and 599",
          "backends.users.outlier.consecutive_failures: must be between 1 and 1000",
          "backends.users.outlier.base_ejection_ms: must be between 1 and 3600000",
          "backends.users.outlier.max_ejection_percent: must be between 0 and 100"));
  std::vector<std::string> problems;
  retry_of(Json::parse(R"({"attempts": 6, "on": ["sometimes", 600], "backoff_ms": -1,
                          "budget_percent": 101, "non_idempotent": "yes", "retries": 2})"),
           &problems);
  EXPECT_THAT(
      problems,
      ElementsAre("retry.attempts: must be between 1 and 5",
                  "retry.on[0]: must be \"connect_error\", \"reset\", \"timeout\" or a "
                  "status (100-599)",
                  "retry.on[1]: must be between 100 and 599",
                  "retry.backoff_ms: must be between 0 and 10000",
                  "retry.budget_percent: must be between 0 and 100",
                  "retry.non_idempotent: must be a boolean", "retry.retries: unknown field"));
}

TEST(HealthSectionsTest, TheLoaderReadsRetryAndReportsItsProblemsByPath) {
  auto doc = valid_document();
  doc["backends"]["users"]["retry"] = {{"attempts", 3}};
  const Config config = parsed(doc);
  EXPECT_EQ(config.backends.at("users").retry->attempts, 3U);
  doc["backends"]["users"]["retry"] = {{"attempts", 0}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.retry.attempts: must be between 1 and 5"));
}

TEST(HealthSectionsTest, ATimeoutLongerThanTheIntervalIsAnError) {
  auto doc = valid_document();
  doc["backends"]["users"]["health_check"] = {{"interval_ms", 1000}, {"timeout_ms", 2000}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("backends.users.health_check.timeout_ms: must not exceed interval_ms"));
}

TEST(HealthSectionsTest, AGrpcCheckAsksAServiceOverHttp2) {
  auto doc = valid_document();
  doc["backends"]["users"]["protocol"] = "h2c";
  doc["backends"]["users"]["health_check"] = {{"type", "grpc"}, {"service", "shop.Orders"}};
  const auto check = parsed(doc).backends.at("users").health_check;
  ASSERT_TRUE(check);
  EXPECT_EQ(check->type, HealthCheckConfig::Type::kGrpc);
  EXPECT_EQ(check->service, "shop.Orders");
}

TEST(HealthSectionsTest, AGrpcCheckNeedsHttp2AndTakesNoHttpFields) {
  auto doc = valid_document();
  doc["backends"]["users"]["health_check"] = {
      {"type", "grpc"}, {"path", "/x"}, {"expected_statuses", {200}}, {"service", "a b"}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre(
          "backends.users.health_check.service: must be printable ASCII without spaces",
          R"(backends.users.health_check.path: is for "type": "http" (gRPC checks ask Health/Check))",
          R"(backends.users.health_check.expected_statuses: is for "type": "http" (gRPC checks ask Health/Check))",
          R"(backends.users.health_check: "type": "grpc" needs "protocol": "h2" or "h2c")"));
  doc["backends"]["users"]["health_check"] = {{"type", "tcp"}, {"service", "x"}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(backends.users.health_check.type: must be "http" or "grpc")",
                          R"(backends.users.health_check.service: is for "type": "grpc")"));
}

TEST(HealthSectionsTest, WrittenBackAsJsonTheyReadTheSame) {
  auto doc = valid_document();
  doc["backends"]["users"]["health_check"] = {{"path", "/up"}};
  doc["backends"]["users"]["outlier"] = {{"consecutive_failures", 2}};
  const Config first = parsed(doc);
  const Config second = parsed(to_json(first));
  EXPECT_EQ(first.backends.at("users"), second.backends.at("users"));
  EXPECT_EQ(to_json(first)["backends"]["users"]["outlier"]["consecutive_failures"], 2);
}

}  // namespace
}  // namespace sluice::config
