// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string_view>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/request/errors.hpp"

// gRPC calls through the gateway (docs/grpc.md): which requests are calls, their deadline, and
// the gRPC status of each answer the gateway makes itself.
namespace sluice::proxy {

struct RequestContext;

/// gRPC status codes sluice names (grpc/doc/statuscodes.md of the gRPC project).
enum class GrpcStatus : int {
  kOk = 0,
  kDeadlineExceeded = 4,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kUnavailable = 14,
  kUnauthenticated = 16,
};

/// Marks `ctx` as a gRPC call when the request came over HTTP/2 with a `content-type` of
/// `application/grpc` (or `application/grpc+...`), and takes its `grpc-timeout`.
void read_grpc_fields(RequestContext& ctx);

/// A `grpc-timeout` value (1 to 8 digits and a unit: H, M, S, m, u, n), or nullopt when malformed.
[[nodiscard]] std::optional<core::Duration> parse_grpc_timeout(std::string_view value) noexcept;

/// The status a gRPC client gets for a gateway answer, or nullopt for the answers that stay plain
/// HTTP (a malformed request, a redirect): limited -> RESOURCE_EXHAUSTED, breaker drop and
/// unreachable backend -> UNAVAILABLE, timeout -> DEADLINE_EXCEEDED, no route -> UNIMPLEMENTED.
[[nodiscard]] std::optional<GrpcStatus> grpc_status_of(GatewayError error) noexcept;

}  // namespace sluice::proxy
