// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/system/error_code.hpp>
#include <optional>
#include <ostream>  // Boost 1.81's beast/http/status.hpp needs it but does not include it
#include <string_view>

namespace sluice::proxy {

/// Every reply the gateway makes itself (docs/behaviour.md "Gateway answers"). One table maps each
/// to its status and the `error` reason of its JSON body.
enum class GatewayError {
  kRateLimited,
  kBackendUnavailable,
  kNoRoute,
  kMethodNotAllowed,
  kUpstreamConnect,
  kUpstreamTimeout,
  kUpstreamReset,
  kBadRequest,
  kHeaderTooLarge,
  kPayloadTooLarge,
  kHeaderTimeout,
  kLimitStoreUnavailable,  ///< the shared limit store failed and on_error is "deny"
  kNotImplemented,         ///< CONNECT: sluice opens no tunnels by method
  kRedirectToHttps,        ///< a plain listener with redirect_to_https: 308 with Location
  kPlainHttpOnTlsPort,     ///< plain HTTP where a TLS ClientHello was expected
  /// A route with `auth` refused the credential (docs/identity.md): 401 with a Bearer challenge.
  kUnauthorized,
  /// The client address failed verification too often (`auth.failure_policy`): 429, checked
  /// before any signature.
  kAuthFailuresExceeded,
  /// The backend's adaptive concurrency limit is reached (docs/latency-protection.md): 503
  /// with `Retry-After: 1`, at once.
  kBackendOverloaded,
};

struct ErrorInfo {
  boost::beast::http::status status;
  std::string_view reason;  ///< `{"error": reason}`, also a metric/log label
};

[[nodiscard]] const ErrorInfo& info(GatewayError error) noexcept;

/// True for errors after which the downstream connection must close (framing errors and
/// timeouts: the stream position is unknown).
[[nodiscard]] bool closes_connection(GatewayError error) noexcept;

/// What to answer when reading a request body from the client failed with `ec`: 413 past
/// max_body_bytes, 400 for a malformed body (bad chunk framing), nothing when the client is
/// gone or stalled (a closed connection or a timeout has nobody to answer).
[[nodiscard]] std::optional<GatewayError> body_read_failure(boost::system::error_code ec) noexcept;

}  // namespace sluice::proxy
