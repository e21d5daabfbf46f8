// SPDX-License-Identifier: Apache-2.0
// gRPC calls through the gateway (docs/grpc.md): grpc-timeout values and the gRPC status of each
// answer the gateway makes itself.
#include "gateway/proxy/request/grpc_call.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

TEST(GrpcCallTest, GrpcTimeoutValuesInEveryUnit) {
  EXPECT_EQ(parse_grpc_timeout("1H"), core::Duration(1h));
  EXPECT_EQ(parse_grpc_timeout("2M"), core::Duration(2min));
  EXPECT_EQ(parse_grpc_timeout("30S"), core::Duration(30s));
  EXPECT_EQ(parse_grpc_timeout("300m"), core::Duration(300ms));
  EXPECT_EQ(parse_grpc_timeout("1500u"), core::Duration(1500us));
  EXPECT_EQ(parse_grpc_timeout("99999999n"), core::Duration(99999999ns));
}

TEST(GrpcCallTest, MalformedGrpcTimeoutsAreIgnored) {
  EXPECT_EQ(parse_grpc_timeout(""), std::nullopt);
  EXPECT_EQ(parse_grpc_timeout("m"), std::nullopt);
  EXPECT_EQ(parse_grpc_timeout("100"), std::nullopt);         // no unit
  EXPECT_EQ(parse_grpc_timeout("100x"), std::nullopt);        // unknown unit
  EXPECT_EQ(parse_grpc_timeout("123456789m"), std::nullopt);  // more than 8 digits
  EXPECT_EQ(parse_grpc_timeout("-1m"), std::nullopt);
  EXPECT_EQ(parse_grpc_timeout("1 m"), std::nullopt);
}

TEST(GrpcCallTest, GatewayAnswersMapToTheStatusesGrpcClientsExpect) {
  EXPECT_EQ(grpc_status_of(GatewayError::kRateLimited), GrpcStatus::kResourceExhausted);
  EXPECT_EQ(grpc_status_of(GatewayError::kBackendUnavailable), GrpcStatus::kUnavailable);
  EXPECT_EQ(grpc_status_of(GatewayError::kUpstreamConnect), GrpcStatus::kUnavailable);
  EXPECT_EQ(grpc_status_of(GatewayError::kUpstreamReset), GrpcStatus::kUnavailable);
  EXPECT_EQ(grpc_status_of(GatewayError::kUpstreamTimeout), GrpcStatus::kDeadlineExceeded);
  EXPECT_EQ(grpc_status_of(GatewayError::kNoRoute), GrpcStatus::kUnimplemented);
  EXPECT_EQ(grpc_status_of(GatewayError::kUnauthorized), GrpcStatus::kUnauthenticated);
  // A malformed request stays an HTTP answer (the gRPC client maps the status itself).
  EXPECT_EQ(grpc_status_of(GatewayError::kBadRequest), std::nullopt);
  EXPECT_EQ(grpc_status_of(GatewayError::kHeaderTooLarge), std::nullopt);
}

}  // namespace
}  // namespace sluice::proxy
