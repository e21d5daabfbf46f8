// SPDX-License-Identifier: Apache-2.0
// Replays with known answers: lines in the gateway's own format (log::AccessLog::format) through
// a ReplaySession, against a new config.
#include "gateway/replay/replayer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/config/config_loader.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/proxy/steps/identify_step.hpp"
#include "gateway/replay/replay_session.hpp"

namespace sluice::replay {
namespace {

using std::chrono::milliseconds;

constexpr const char* kUserA = "aaaaaaaaaaaa";
constexpr const char* kUserB = "bbbbbbbbbbbb";

/// 2026-11-25T00:00:00.000Z
const std::chrono::system_clock::time_point kDay{milliseconds(1'795'564'800'000)};

/// A new config: backend "b", routes and limits as given (JSON object members, no braces).
config::Config new_config(const std::string& limits, const std::string& routes,
                          const std::string& overrides = "{}") {
  const auto loaded = config::parse_config_text(
      R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},"limits":)" + limits + R"(,"overrides":)" +
      overrides + R"(,"routes":)" + routes + "}");
  if (!loaded.ok()) {
    throw std::runtime_error("bad test config: " + config::to_string(loaded.problems.front()));
  }
  return *loaded.config;
}

/// One access log line as the gateway writes it.
std::string logged(milliseconds at, std::string_view route, std::string_view user,
                   std::string_view limit, std::string_view path = "/api/x") {
  log::AccessRecord r;
  r.ts = kDay + at;
  r.request_id = "id";
  r.method = "GET";
  r.path = path;
  r.route = route;
  r.backend = route == "none" ? "none" : "b";
  r.endpoint = "-";
  r.user = user;
  r.status = limit == "limited" ? 429 : 200;
  r.limit = limit;
  r.client_ip = "192.0.2.1";
  r.protocol = "HTTP/1.1";
  return log::AccessLog::format(r) + "\n";
}

ReplayReport replay(const config::Config& next, const std::string& log,
                    ReplayOptions options = {}) {
  ReplaySession session(next, std::move(options));
  session.feed(log);
  session.finish();
  return session.report();
}

const PolicyTotals& row(const ReplayReport& report, std::string_view policy) {
  for (const PolicyTotals& p : report.policies) {
    if (p.policy == policy) {
      return p;
    }
  }
  throw std::runtime_error("no row " + std::string(policy));
}

const config::Config kHalved =
    new_config(R"({"standard":{"requests":5,"window_ms":60000}})",
               R"([{"name":"api","prefix":"/api","backend":"b","limit":"standard"}])");

TEST(ReplayerTest, HalvingALimitLimitsTheRequestsBeyondTheNewOne) {
  // Logged under a limit of 10 a minute: 20 requests a second apart, the last 10 limited.
  std::string log;
  for (int i = 0; i < 20; ++i) {
    log += logged(milliseconds(i * 1000), "api", kUserA, i < 10 ? "allowed" : "limited");
  }
  const ReplayReport report = replay(kHalved, log);
  const PolicyTotals& standard = row(report, "standard");
  EXPECT_EQ(standard.requests, 20U);
  EXPECT_EQ(standard.allowed_then, 10U);
  EXPECT_EQ(standard.limited_then, 10U);
  EXPECT_EQ(standard.allowed_now, 5U);
  EXPECT_EQ(standard.limited_now, 15U);
  EXPECT_EQ(standard.delta(), 5);
  ASSERT_EQ(report.top_users.size(), 1U);
  EXPECT_EQ(report.top_users[0].user, kUserA);
  EXPECT_EQ(report.top_users[0].delta(), 5);
  EXPECT_EQ(report.replayed, 20U);
  EXPECT_EQ(report.lines, 20U);
  EXPECT_EQ(report.first_ts, "2026-11-25T00:00:00.000Z");
  EXPECT_EQ(report.last_ts, "2026-11-25T00:00:19.000Z");
}

TEST(ReplayerTest, DecidesAtTheLoggedTimes) {
  const config::Config next =
      new_config(R"({"standard":{"requests":2,"window_ms":1000,"buckets":10}})",
                 R"([{"name":"api","prefix":"/api","backend":"b","limit":"standard"}])");
  const std::string log = logged(milliseconds(0), "api", kUserA, "allowed") +
                          logged(milliseconds(100), "api", kUserA, "allowed") +
                          logged(milliseconds(200), "api", kUserA, "allowed") +
                          logged(milliseconds(5000), "api", kUserA, "allowed");
  const ReplayReport report = replay(next, log);  // row() points into it
  const PolicyTotals& standard = row(report, "standard");
  EXPECT_EQ(standard.allowed_now, 3U);  // the window has passed by the fourth
  EXPECT_EQ(standard.limited_now, 1U);
}

TEST(ReplayerTest, DecidesLinesWithinTheReorderWindowInTimeOrder) {
  const config::Config next =
      new_config(R"({"standard":{"requests":1,"window_ms":1000,"buckets":1}})",
                 R"([{"name":"api","prefix":"/api","backend":"b","limit":"standard"}])");
  // In time order: 0 ms admitted, 900 ms limited, 1500 ms (a new window) admitted. In the
  // order written, 1500 ms would come first and both others would be limited.
  const std::string log = logged(milliseconds(1500), "api", kUserA, "allowed") +
                          logged(milliseconds(0), "api", kUserA, "allowed") +
                          logged(milliseconds(900), "api", kUserA, "allowed");
  const ReplayReport report = replay(next, log);
  EXPECT_EQ(row(report, "standard").allowed_now, 2U);
  EXPECT_EQ(row(report, "standard").limited_now, 1U);
  EXPECT_EQ(report.late, 0U);
  ReplayOptions no_window;
  no_window.reorder_window = milliseconds(0);
  const ReplayReport unordered = replay(next, log, no_window);
  EXPECT_EQ(row(unordered, "standard").allowed_now, 1U);
  EXPECT_EQ(row(unordered, "standard").limited_now, 2U);
  EXPECT_EQ(unordered.late, 2U);
}

TEST(ReplayerTest, CountsLinesLaterThanTheWindowAndStillDecidesThem) {
  const std::string log = logged(milliseconds(10'000), "api", kUserA, "allowed") +
                          logged(milliseconds(13'000), "api", kUserA, "allowed") +
                          logged(milliseconds(5'000), "api", kUserA, "allowed");
  const ReplayReport report = replay(kHalved, log);
  EXPECT_EQ(report.late, 1U);
  EXPECT_EQ(report.replayed, 3U);
  EXPECT_EQ(report.first_ts, "2026-11-25T00:00:05.000Z");
  EXPECT_EQ(report.reorder_window_ms, 2000U);
}

TEST(ReplayerTest, MapsRenamedRoutesThroughTheNewRouter) {
  const config::Config next =
      new_config(R"({"standard":{"requests":1,"window_ms":60000}})",
                 R"([{"name":"api-v2","prefix":"/api","backend":"b","limit":"standard"},)"
                 R"({"name":"web","prefix":"/web","backend":"b"}])");
  const std::string log = logged(milliseconds(0), "api", kUserA, "allowed", "/api/x") +
                          logged(milliseconds(1), "api", kUserA, "allowed", "/api/y") +
                          logged(milliseconds(2), "web", kUserA, "allowed", "/web") +
                          logged(milliseconds(3), "old", kUserA, "allowed", "/elsewhere") +
                          logged(milliseconds(4), "none", kUserA, "none", "/nothing");
  const ReplayReport report = replay(next, log);
  EXPECT_EQ(row(report, "standard").requests, 2U);
  EXPECT_EQ(row(report, "standard").limited_now, 1U);
  EXPECT_EQ(row(report, kNoPolicy).requests, 1U);
  EXPECT_EQ(report.unrouted_now, 1U);
  EXPECT_EQ(report.unrouted_then, 1U);
  EXPECT_EQ(report.replayed, 3U);
}

TEST(ReplayerTest, RemovingALimitFreesWhatItLimited) {
  const config::Config next = new_config("{}", R"([{"name":"api","prefix":"/api","backend":"b"}])");
  std::string log;
  for (int i = 0; i < 4; ++i) {
    log += logged(milliseconds(i), "api", kUserB, i == 0 ? "allowed" : "limited");
  }
  const ReplayReport report = replay(next, log);
  const PolicyTotals& none = row(report, kNoPolicy);
  EXPECT_EQ(none.limited_then, 3U);
  EXPECT_EQ(none.allowed_now, 4U);
  EXPECT_EQ(none.delta(), -3);
  ASSERT_EQ(report.top_users.size(), 1U);
  EXPECT_EQ(report.top_users[0].policy, kNoPolicy);
  EXPECT_EQ(report.top_users[0].delta(), -3);
}

TEST(ReplayerTest, AShadowPolicyLimitsNothingButCountsWhatItWould) {
  const config::Config next =
      new_config(R"({"standard":{"requests":1,"window_ms":60000,"mode":"shadow"}})",
                 R"([{"name":"api","prefix":"/api","backend":"b","limit":"standard"}])");
  std::string log;
  for (int i = 0; i < 3; ++i) {
    log += logged(milliseconds(i), "api", kUserA, i == 0 ? "allowed" : "shadow_limited");
  }
  const ReplayReport report = replay(next, log);  // row() points into it
  const PolicyTotals& standard = row(report, "standard");
  EXPECT_EQ(standard.allowed_now, 3U);
  EXPECT_EQ(standard.limited_now, 0U);
  EXPECT_EQ(standard.shadow_limited_now, 2U);
  EXPECT_EQ(standard.allowed_then, 3U);
  EXPECT_EQ(standard.shadow_limited_then, 2U);
}

class ReplayOverridesTest : public ::testing::Test {
 protected:
  const core::KeyedHash hash = core::KeyedHash::from_secret("replay-test-secret-0123456789");
  const std::string vip = [this] {
    const auto label = proxy::user_label(hash, "vip-key");
    return std::string(label.data(), label.size());
  }();
  const config::Config next =
      new_config(R"({"standard":{"requests":1,"window_ms":60000}})",
                 R"([{"name":"api","prefix":"/api","backend":"b","limit":"standard"}])",
                 R"({"standard":{"vip-key":{"requests":5},"absent-key":{"requests":9}}})");
  const std::string log = [this] {
    std::string text;
    for (int i = 0; i < 5; ++i) {
      text += logged(milliseconds(i), "api", vip, "allowed");
      text += logged(milliseconds(i), "api", kUserB, "allowed");
    }
    return text;
  }();
};

TEST_F(ReplayOverridesTest, ApplyByLabelWhenTheLogsHashKeyIsKnown) {
  ReplayOptions options;
  options.user_hash = hash;
  const ReplayReport report = replay(next, log, options);
  EXPECT_EQ(row(report, "standard").allowed_now, 6U);  // vip 5, the other user 1
  EXPECT_EQ(row(report, "standard").limited_now, 4U);
  ASSERT_EQ(report.overrides.size(), 1U);
  EXPECT_TRUE(report.overrides[0].matched);
  EXPECT_EQ(report.overrides[0].keys, 2U);
  EXPECT_EQ(report.overrides[0].seen, 1U);
}

TEST_F(ReplayOverridesTest, CannotApplyWithoutTheKeyAndSaySo) {
  const ReplayReport report = replay(next, log);
  EXPECT_EQ(row(report, "standard").allowed_now, 2U);  // both at the policy's 1
  ASSERT_EQ(report.overrides.size(), 1U);
  EXPECT_FALSE(report.overrides[0].matched);
  EXPECT_EQ(report.overrides[0].keys, 2U);
}

TEST(ReplayerTest, TopUsersAreTheLargestChangesFirst) {
  const config::Config next =
      new_config(R"({"standard":{"requests":2,"window_ms":60000}})",
                 R"([{"name":"api","prefix":"/api","backend":"b","limit":"standard"}])");
  std::string log;
  for (int i = 0; i < 6; ++i) {  // A: 0 limited then, 4 now (+4)
    log += logged(milliseconds(i), "api", kUserA, "allowed");
  }
  for (int i = 0; i < 2; ++i) {  // B: 2 limited then, 0 now (-2)
    log += logged(milliseconds(i), "api", kUserB, "limited");
  }
  log += logged(milliseconds(7), "api", "cccccccccccc", "allowed");  // unchanged
  ReplayOptions options;
  options.top_users = 1;
  ReplayReport report = replay(next, log, options);
  ASSERT_EQ(report.top_users.size(), 1U);
  EXPECT_EQ(report.top_users[0].user, kUserA);
  report = replay(next, log);
  ASSERT_EQ(report.top_users.size(), 2U);  // the unchanged user is not listed
  EXPECT_EQ(report.top_users[1].user, kUserB);
  EXPECT_EQ(report.top_users[1].delta(), -2);
}

TEST(ReplayerTest, CapsTheUserTableButKeepsTheTotalsExact) {
  std::string log;
  for (int i = 0; i < 3; ++i) {
    log += logged(milliseconds(i), "api", kUserA, "allowed");
    log += logged(milliseconds(i), "api", kUserB, "allowed");
  }
  ReplayOptions options;
  options.max_tracked_users = 1;
  const ReplayReport report = replay(kHalved, log, options);
  EXPECT_EQ(row(report, "standard").requests, 6U);
  EXPECT_EQ(report.untracked_requests, 3U);
}

}  // namespace
}  // namespace sluice::replay
