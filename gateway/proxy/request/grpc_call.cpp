// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/request/grpc_call.hpp"

#include <boost/beast/core/string.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>

#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {
namespace {

constexpr std::string_view kGrpcType = "application/grpc";

bool is_grpc_type(std::string_view value) noexcept {
  if (value.size() < kGrpcType.size()) {
    return false;
  }
  for (std::size_t i = 0; i < kGrpcType.size(); ++i) {
    char c = value[i];
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    if (c != kGrpcType[i]) {
      return false;
    }
  }
  const std::string_view rest = value.substr(kGrpcType.size());
  return rest.empty() || rest.front() == '+' || rest.front() == ';';
}

}  // namespace

void read_grpc_fields(RequestContext& ctx) {
  const http1::RequestHead& head = ctx.head();
  for (std::size_t i = 0; i < head.fields.size(); ++i) {
    const http1::FieldRef& f = head.fields[i];
    if (f.id == boost::beast::http::field::content_type) {
      ctx.grpc = is_grpc_type(f.value);
    } else if (f.name.size() == 12 && boost::beast::iequals(f.name, "grpc-timeout")) {
      ctx.grpc_timeout = parse_grpc_timeout(f.value);
    }
  }
  if (!ctx.grpc) {
    ctx.grpc_timeout.reset();
  }
}

std::optional<core::Duration> parse_grpc_timeout(std::string_view value) noexcept {
  // TimeoutValue: 1 to 8 ASCII digits; TimeoutUnit: one letter (the gRPC HTTP/2 protocol).
  if (value.size() < 2 || value.size() > 9) {
    return std::nullopt;
  }
  std::uint64_t amount = 0;
  const char* end = value.data() + value.size() - 1;
  const auto [ptr, ec] = std::from_chars(value.data(), end, amount);
  if (ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  using std::chrono::duration_cast;
  switch (*end) {
    case 'H':
      return duration_cast<core::Duration>(std::chrono::hours(amount));
    case 'M':
      return duration_cast<core::Duration>(std::chrono::minutes(amount));
    case 'S':
      return duration_cast<core::Duration>(std::chrono::seconds(amount));
    case 'm':
      return duration_cast<core::Duration>(std::chrono::milliseconds(amount));
    case 'u':
      return duration_cast<core::Duration>(std::chrono::microseconds(amount));
    case 'n':
      return duration_cast<core::Duration>(std::chrono::nanoseconds(amount));
    default:
      return std::nullopt;
  }
}

std::optional<GrpcStatus> grpc_status_of(GatewayError error) noexcept {
  switch (error) {
    case GatewayError::kRateLimited:
    case GatewayError::kAuthFailuresExceeded:
    case GatewayError::kPayloadTooLarge:
      return GrpcStatus::kResourceExhausted;
    case GatewayError::kBackendUnavailable:
    case GatewayError::kBackendOverloaded:
    case GatewayError::kUpstreamConnect:
    case GatewayError::kUpstreamReset:
    case GatewayError::kLimitStoreUnavailable:
      return GrpcStatus::kUnavailable;
    case GatewayError::kUpstreamTimeout:
      return GrpcStatus::kDeadlineExceeded;
    case GatewayError::kNoRoute:
    case GatewayError::kMethodNotAllowed:
      return GrpcStatus::kUnimplemented;
    case GatewayError::kUnauthorized:
      return GrpcStatus::kUnauthenticated;
    default:
      return std::nullopt;
  }
}

}  // namespace sluice::proxy
