// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/access_log.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::log {
namespace {

TEST(AccessLogTest, FormatsOneJsonObjectWithEverySpecField) {
  AccessRecord r;
  r.ts = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
  r.request_id = "rid";
  r.method = "GET";
  r.path = "/api/users/7";
  r.route = "users";
  r.backend = "users";
  r.endpoint = "127.0.0.1:9001";
  r.status = 200;
  r.bytes_in = 5;
  r.bytes_out = 10;
  r.duration_ms = 1.5;
  r.upstream_ms = 0.25;
  const auto j = nlohmann::json::parse(AccessLog::format(r));
  EXPECT_EQ(j["ts"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(j["request_id"], "rid");
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/api/users/7");
  EXPECT_EQ(j["route"], "users");
  EXPECT_EQ(j["backend"], "users");
  EXPECT_EQ(j["endpoint"], "127.0.0.1:9001");
  EXPECT_TRUE(j["user"].is_null());
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["bytes_in"], 5);
  EXPECT_EQ(j["bytes_out"], 10);
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["upstream_ms"].get<double>(), 0.25);
  EXPECT_EQ(j["limit"], "none");
  EXPECT_EQ(j["breaker"], "off");
  EXPECT_EQ(j.size(), 15U);
}

TEST(AccessLogTest, EscapesWhateverAClientPutInItsRequestLine) {
  AccessRecord r;
  r.method = "G\"E\\T";
  r.path = std::string_view("/\x01\x7f\xc3\xa9{}", 7);
  const auto line = AccessLog::format(r);
  const auto j = nlohmann::json::parse(line);  // throws if the line is not valid JSON
  EXPECT_EQ(j["method"], "G\"E\\T");
  EXPECT_EQ(line.find('\x01'), std::string::npos);
  EXPECT_TRUE(j["upstream_ms"].is_null());
}

}  // namespace
}  // namespace sluice::log
