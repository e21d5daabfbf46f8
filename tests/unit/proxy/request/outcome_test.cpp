// SPDX-License-Identifier: Apache-2.0
// The outcome table and the keep-alive decision: the two places that decide for every request.
#include <gtest/gtest.h>

#include "gateway/proxy/request/keep_alive.hpp"
#include "gateway/proxy/request/upstream_outcome.hpp"

namespace sluice::proxy {
namespace {

using metrics::UpstreamOutcome;

TEST(OutcomeTableTest, MapsEveryUpstreamResult) {
  struct Row {
    UpstreamResult result;
    bool failure_status;
    std::optional<GatewayError> reply;
    std::optional<UpstreamOutcome> metric;
    BreakerRecord breaker;
  };
  const Row rows[] = {
      {UpstreamResult::kNotSent, false, std::nullopt, std::nullopt, BreakerRecord::kNothing},
      {UpstreamResult::kResponse, false, std::nullopt, UpstreamOutcome::kSuccess,
       BreakerRecord::kSuccess},
      {UpstreamResult::kResponse, true, std::nullopt, UpstreamOutcome::kFailure,
       BreakerRecord::kFailure},
      {UpstreamResult::kConnectError, false, GatewayError::kUpstreamConnect,
       UpstreamOutcome::kConnectError, BreakerRecord::kFailure},
      {UpstreamResult::kTimeout, false, GatewayError::kUpstreamTimeout, UpstreamOutcome::kTimeout,
       BreakerRecord::kFailure},
      {UpstreamResult::kReset, false, GatewayError::kUpstreamReset, UpstreamOutcome::kReset,
       BreakerRecord::kFailure},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(static_cast<int>(r.result));
    const OutcomeRow row = classify(r.result, r.failure_status);
    EXPECT_EQ(row.reply, r.reply);
    EXPECT_EQ(row.metric, r.metric);
    EXPECT_EQ(row.breaker, r.breaker);
  }
  // 502 for connect errors and resets, 504 for timeouts.
  EXPECT_EQ(info(*classify(UpstreamResult::kConnectError, false).reply).status,
            boost::beast::http::status::bad_gateway);
  EXPECT_EQ(info(*classify(UpstreamResult::kTimeout, false).reply).status,
            boost::beast::http::status::gateway_timeout);
  EXPECT_EQ(info(*classify(UpstreamResult::kReset, false).reply).status,
            boost::beast::http::status::bad_gateway);
}

TEST(KeepAliveTest, OpenOnlyWhenEverythingAllowsIt) {
  RequestContext ctx;
  ctx.client_keep_alive = true;
  EXPECT_TRUE(decide_keep_alive(ctx, {}));
  EXPECT_FALSE(decide_keep_alive(ctx, {.draining = true}));
  EXPECT_FALSE(decide_keep_alive(ctx, {.request_read = false}));
  EXPECT_FALSE(decide_keep_alive(ctx, {.closes_itself = true}));
  ctx.client_keep_alive = false;
  EXPECT_FALSE(decide_keep_alive(ctx, {}));
}

TEST(KeepAliveTest, ABrokenRequestClosesAndAnOrdinaryRefusalDoesNot) {
  RequestContext ctx;
  ctx.client_keep_alive = true;
  for (const GatewayError e :
       {GatewayError::kBadRequest, GatewayError::kHeaderTooLarge, GatewayError::kPayloadTooLarge,
        GatewayError::kHeaderTimeout, GatewayError::kNotImplemented}) {
    ctx.error = e;
    EXPECT_FALSE(decide_keep_alive(ctx, {})) << info(e).reason;
  }
  for (const GatewayError e : {GatewayError::kNoRoute, GatewayError::kMethodNotAllowed,
                               GatewayError::kRateLimited, GatewayError::kBackendUnavailable,
                               GatewayError::kUpstreamConnect, GatewayError::kUpstreamTimeout}) {
    ctx.error = e;
    EXPECT_TRUE(decide_keep_alive(ctx, {})) << info(e).reason;
  }
}

TEST(GatewayErrorTest, ConnectIsAnswered501NotImplemented) {
  EXPECT_EQ(info(GatewayError::kNotImplemented).status,
            boost::beast::http::status::not_implemented);
  EXPECT_EQ(info(GatewayError::kNotImplemented).reason, "not_implemented");
}

}  // namespace
}  // namespace sluice::proxy
