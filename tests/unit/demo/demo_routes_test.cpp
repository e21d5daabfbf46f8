// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/demo_routes.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string_view>

namespace sluice::demo {
namespace {

namespace http = boost::beast::http;

http::request_header<> head(http::verb method, std::string_view target) {
  http::request_header<> req;
  req.method(method);
  req.target(target);
  req.version(11);
  return req;
}

/// fault_reply for `method target` (which must be /healthz or /control) against `faults`.
Reply fault_answer(FaultState& faults, http::verb method, std::string_view target) {
  return fault_reply(match_route(target), head(method, target), faults);
}

TEST(DemoRoutesTest, MatchesTheFaultRoutesByPathAlone) {
  EXPECT_EQ(match_route("/healthz").kind, RouteKind::kHealth);
  EXPECT_EQ(match_route("/healthz?verbose=1").kind, RouteKind::kHealth);
  EXPECT_EQ(match_route("/control").kind, RouteKind::kControl);
  EXPECT_EQ(match_route("/control?health=down").kind, RouteKind::kControl);
  EXPECT_EQ(match_route("/healthz/x").kind, RouteKind::kNotFound);
  EXPECT_EQ(match_route("/controls").kind, RouteKind::kNotFound);
}

TEST(DemoRoutesTest, HealthzFollowsTheHealthSettingOnly) {
  FaultState faults({true, 100, FailStatus::kReset, std::chrono::milliseconds(0)});
  const auto up = fault_answer(faults, http::verb::get, "/healthz");
  EXPECT_EQ(up.status, 200U);
  EXPECT_EQ(up.body, R"({"status":"up"})");
  EXPECT_EQ(up.content_type, "application/json");
  faults.apply({.healthy = false});
  const auto down = fault_answer(faults, http::verb::head, "/healthz");
  EXPECT_EQ(down.status, 503U);
  EXPECT_EQ(down.body, R"({"status":"down"})");
  EXPECT_FALSE(down.close);
}

TEST(DemoRoutesTest, ControlReportsAndChangesTheSettings) {
  FaultState faults;
  const auto state = fault_answer(faults, http::verb::get, "/control");
  EXPECT_EQ(state.status, 200U);
  EXPECT_EQ(state.body, R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0,)"
                        R"("capacity":0,"service_ms":0,"in_service":0,"queued":0})");
  const auto changed =
      fault_answer(faults, http::verb::post,
                   "/control?health=down&fail_percent=25&delay_ms=7&capacity=16&service_ms=10");
  EXPECT_EQ(changed.status, 200U);
  EXPECT_EQ(changed.body, R"({"health":"down","fail_percent":25,"fail_status":"503","delay_ms":7,)"
                          R"("capacity":16,"service_ms":10,"in_service":0,"queued":0})");
  EXPECT_EQ(faults.settings().fail_percent, 25U);
  EXPECT_EQ(faults.capacity().capacity(), 16U);
  EXPECT_EQ(faults.service_time(), std::chrono::milliseconds(10));
  EXPECT_EQ(fault_answer(faults, http::verb::post, "/control").body, changed.body);
  EXPECT_EQ(fault_answer(faults, http::verb::head, "/control").body, changed.body);
  // The load: the requests that hold a slot, and those that wait for one.
  const SlotClaim held = faults.capacity().claim([] {});
  EXPECT_NE(fault_answer(faults, http::verb::get, "/control").body.find(R"("in_service":1,)"),
            std::string::npos);
}

TEST(DemoRoutesTest, ControlRefusesBadParametersWithoutApplyingAny) {
  FaultState faults;
  const auto bad = fault_answer(faults, http::verb::post, "/control?fail_percent=5&health=ill");
  EXPECT_EQ(bad.status, 400U);
  EXPECT_EQ(bad.body, R"({"error":"bad_parameter","parameter":"health","expected":"up or down"})");
  const auto unknown = fault_answer(faults, http::verb::post, "/control?failpercent=5");
  EXPECT_EQ(unknown.status, 400U);
  EXPECT_EQ(unknown.body, R"({"error":"unknown_parameter","parameter":"failpercent"})");
  const auto capacity = fault_answer(faults, http::verb::post, "/control?capacity=100001");
  EXPECT_EQ(capacity.status, 400U);
  EXPECT_EQ(
      capacity.body,
      R"({"error":"bad_parameter","parameter":"capacity","expected":"between 0 and 100000"})");
  EXPECT_EQ(faults.settings(), FaultSettings{});
}

TEST(DemoRoutesTest, ControlChangesOnlyThroughPost) {
  FaultState faults;
  const auto get = fault_answer(faults, http::verb::get, "/control?health=down");
  EXPECT_EQ(get.status, 400U);
  EXPECT_EQ(get.body, R"({"error":"changes_need_post"})");
  const auto put = fault_answer(faults, http::verb::put, "/control?health=down");
  EXPECT_EQ(put.status, 405U);
  EXPECT_EQ(put.allow, "GET, HEAD, POST");
  EXPECT_TRUE(faults.is_healthy());
}

TEST(DemoRoutesTest, SimpleRoutesCarryNoAllowField) {
  EXPECT_EQ(simple_reply(match_route("/ok"), head(http::verb::get, "/ok"), 0).allow, "");
}

}  // namespace
}  // namespace sluice::demo
