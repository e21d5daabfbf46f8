// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/request/errors.hpp"

#include <array>
#include <boost/beast/http/error.hpp>
#include <cstddef>

namespace sluice::proxy {
namespace {

using boost::beast::http::status;

// Indexed by GatewayError.
constexpr std::array<ErrorInfo, 18> kErrors{{
    {status::too_many_requests, "rate_limited"},
    {status::service_unavailable, "backend_unavailable"},
    {status::not_found, "no_route"},
    {status::method_not_allowed, "method_not_allowed"},
    {status::bad_gateway, "upstream_connect_error"},
    {status::gateway_timeout, "upstream_timeout"},
    {status::bad_gateway, "upstream_reset"},
    {status::bad_request, "bad_request"},
    {status::request_header_fields_too_large, "header_too_large"},
    {status::payload_too_large, "payload_too_large"},
    {status::request_timeout, "header_timeout"},
    {status::service_unavailable, "limit_store_unavailable"},
    {status::not_implemented, "not_implemented"},
    {status::permanent_redirect, "redirect_to_https"},
    {status::bad_request, "plain_http_on_tls_port"},
    {status::unauthorized, "unauthorized"},
    {status::too_many_requests, "too_many_auth_failures"},
    {status::service_unavailable, "backend_overloaded"},
}};

}  // namespace

const ErrorInfo& info(GatewayError error) noexcept {
  return kErrors[static_cast<std::size_t>(error)];
}

bool closes_connection(GatewayError error) noexcept {
  switch (error) {
    case GatewayError::kBadRequest:
    case GatewayError::kHeaderTooLarge:
    case GatewayError::kPayloadTooLarge:
    case GatewayError::kHeaderTimeout:
    case GatewayError::kNotImplemented:  // a CONNECT client may already be sending tunnel bytes
    case GatewayError::kPlainHttpOnTlsPort:
      return true;
    default:
      return false;
  }
}

std::optional<GatewayError> body_read_failure(boost::system::error_code ec) noexcept {
  namespace http = boost::beast::http;
  if (ec == http::error::body_limit) {
    return GatewayError::kPayloadTooLarge;
  }
  const bool parse_error = &ec.category() == &make_error_code(http::error::bad_chunk).category();
  if (parse_error && ec != http::error::end_of_stream && ec != http::error::partial_message &&
      ec != http::error::need_buffer) {
    return GatewayError::kBadRequest;
  }
  return std::nullopt;
}

}  // namespace sluice::proxy
