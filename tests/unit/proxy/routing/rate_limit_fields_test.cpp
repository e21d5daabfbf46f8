// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/rate_limit_fields.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

RouteLimit limit_named(const std::string& name, std::chrono::milliseconds window) {
  RouteLimit limit;
  limit.name = name;
  limit.window_s = whole_seconds_up(window);
  limit.quoted_name = structured_string(name);
  limit.json_name = json_string(name);
  return limit;
}

TEST(RateLimitFieldsTest, RoundsSecondsUp) {
  EXPECT_EQ(whole_seconds_up(0ms), 0U);
  EXPECT_EQ(whole_seconds_up(1ns), 1U);
  EXPECT_EQ(whole_seconds_up(1000ms), 1U);
  EXPECT_EQ(whole_seconds_up(1001ms), 2U);
  EXPECT_EQ(whole_seconds_up(-5ms), 0U);
}

TEST(RateLimitFieldsTest, QuotesPolicyNamesAsStructuredStrings) {
  EXPECT_EQ(structured_string("standard"), R"("standard")");
  EXPECT_EQ(structured_string(R"(a"b\c)"), R"("a\"b\\c")");
  EXPECT_EQ(structured_string("t\u00e9"), "\"t??\"");
}

TEST(RateLimitFieldsTest, AdmittedCarriesRemainingAndReset) {
  const RouteLimit limit = limit_named("standard", 60000ms);
  limiter::LimitDecision d;
  d.allowed = true;
  d.limit = 100;
  d.remaining = 99;
  d.reset = 59001ms;
  RateLimitFields f;
  rate_limit_fields(limit, d, f);
  EXPECT_EQ(f.policy(), R"("standard";q=100;w=60)");
  EXPECT_EQ(f.state(), R"("standard";r=99;t=60)");
  EXPECT_EQ(f.retry_after_s, 0U);
}

TEST(RateLimitFieldsTest, DeniedCarriesZeroRemainingAndRetryAfter) {
  const RouteLimit limit = limit_named("login", 1500ms);
  limiter::LimitDecision d;
  d.allowed = false;
  d.limit = 5;
  d.remaining = 0;
  d.retry_after = 250ms;
  RateLimitFields f;
  rate_limit_fields(limit, d, f);
  EXPECT_EQ(f.policy(), R"("login";q=5;w=2)");
  EXPECT_EQ(f.state(), R"("login";r=0;t=1)");
  EXPECT_EQ(f.retry_after_s, 1U);
  d.retry_after = 0ms;  // e.g. an override of 0: still a positive Retry-After
  rate_limit_fields(limit, d, f);
  EXPECT_EQ(f.retry_after_s, 1U);
  EXPECT_EQ(f.state(), R"("login";r=0;t=1)");
}

TEST(RateLimitFieldsTest, LimitedBodyIsTheSpecJson) {
  const RouteLimit limit = limit_named(R"(we"ird)", 1000ms);
  const auto body = nlohmann::json::parse(limited_body(limit, 7));
  EXPECT_EQ(body, (nlohmann::json{
                      {"error", "rate_limited"}, {"policy", R"(we"ird)"}, {"retry_after_s", 7}}));
}

}  // namespace
}  // namespace sluice::proxy
