// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string_view>

// The request-target's forms and the Host grammar (docs/http-conformance.md, "Request
// target" and "Host"). Pure functions over views: no allocation, no I/O, thread-safe.
namespace sluice::http1 {

/// The four forms of a request-target (RFC 9112 §3.2).
enum class TargetForm {
  kOrigin,    ///< `/path?query`
  kAbsolute,  ///< `http://authority/path?query` (http and https only)
  kAsterisk,  ///< `*` (OPTIONS only)
};

/// A request-target split for routing. Views into the target.
struct RequestTarget {
  TargetForm form = TargetForm::kOrigin;
  std::string_view authority;  ///< absolute-form: `host[:port]`, never empty
  std::string_view path;       ///< origin- and absolute-form, up to the query; may be empty in
                               ///< absolute-form (`http://h?q` means path `/`)
  std::string_view query;      ///< `?...` or empty
};

/// Splits `target` into its form, authority, path and query, or nothing when it is not a
/// request-target sluice accepts (docs/http-conformance.md, "Request target"):
/// - origin-form: starts with `/`;
/// - absolute-form: scheme `http` or `https` (any case), `//`, an authority that passes
///   valid_host() with a non-empty host and no userinfo, then a path starting with `/` or none;
/// - asterisk-form: exactly `*`.
/// Refused: a fragment (`#`) anywhere, any other scheme, authority-form (CONNECT's form, which
/// the caller answers before calling this), and anything else.
[[nodiscard]] std::optional<RequestTarget> parse_request_target(std::string_view target) noexcept;

/// True when `value` matches `uri-host [":" port]` (RFC 9110 §7.2 with RFC 3986 §3.2.2-3.2.3):
/// a reg-name (unreserved and sub-delims), an IPv4 address (a reg-name too), or an IP-literal in
/// brackets (an IPv6 address or IPvFuture), then optionally `:` and digits. An empty value is
/// valid (the grammar allows an empty reg-name). Stricter than the grammar in one place: a
/// percent-encoded reg-name is refused, since a backend that decodes it would serve a host
/// other than the one sluice routed by.
[[nodiscard]] bool valid_host(std::string_view value) noexcept;

}  // namespace sluice::http1
