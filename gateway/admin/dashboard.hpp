// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string_view>

#include "gateway/admin/admin_server.hpp"

namespace sluice::admin {

/// Where the dashboard page lives; everything at or below it is the page's.
inline constexpr std::string_view kDashboardPath = "/admin/ui";

/// The Content-Security-Policy of every dashboard reply: the page's own script and styles, calls
/// to its own origin, nothing inline, no frames.
inline constexpr std::string_view kDashboardCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Answers `req` when its path is the dashboard's (docs/operating.md "Dashboard"):
/// `GET /admin/ui` (or `/admin/ui/`) the HTML, `/admin/ui/app.js` and `/admin/ui/app.css`, 404
/// for another path below `/admin/ui/`, 405 for a method other than GET and HEAD; nothing for
/// any other path. Served without the admin token: the files are the same for everyone and hold
/// no data (the script asks the token-protected API for everything). Each reply carries
/// kDashboardCsp, `X-Content-Type-Options: nosniff`, `Cache-Control: no-cache` and an ETag
/// (`If-None-Match` gets 304). Stateless; thread-safe.
[[nodiscard]] std::optional<Response> dashboard_response(const Request& req);

namespace detail {
// The page's files (gateway/admin/ui/), embedded by CMake at configure time into a generated
// source (gateway/admin/dashboard_assets.cpp.in).
extern const std::string_view kDashboardHtml;
extern const std::string_view kDashboardJs;
extern const std::string_view kDashboardCss;
}  // namespace detail

}  // namespace sluice::admin
