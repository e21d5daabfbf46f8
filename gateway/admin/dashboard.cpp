// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/dashboard.hpp"

#include <array>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>

namespace sluice::admin {
namespace {

namespace http = boost::beast::http;

struct DashboardFile {
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
  std::string etag;
};

// A strong validator for a file that changes only with the binary: FNV-1a (64 bit) of its
// bytes, in quotes as RFC 9110 section 8.8.3 spells an entity tag.
std::string dashboard_etag(std::string_view body) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : body) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  constexpr std::string_view kHexDigits = "0123456789abcdef";
  std::string tag(18, '"');
  for (std::size_t i = 16; i > 0; --i, hash >>= 4U) {
    tag[i] = kHexDigits[hash & 0xfU];
  }
  return tag;
}

const std::array<DashboardFile, 3>& dashboard_files() {
  static const std::array<DashboardFile, 3> files{{
      {kDashboardPath, "text/html; charset=utf-8", detail::kDashboardHtml,
       dashboard_etag(detail::kDashboardHtml)},
      {"/admin/ui/app.js", "text/javascript; charset=utf-8", detail::kDashboardJs,
       dashboard_etag(detail::kDashboardJs)},
      {"/admin/ui/app.css", "text/css; charset=utf-8", detail::kDashboardCss,
       dashboard_etag(detail::kDashboardCss)},
  }};
  return files;
}

// The fields every dashboard reply carries, errors included.
Response with_dashboard_fields(Response res) {
  res.set("Content-Security-Policy", kDashboardCsp);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  res.set(http::field::cache_control, "no-cache");  // revalidate (ETag): a new binary, new files
  return res;
}

Response dashboard_file(const Request& req, const DashboardFile& file) {
  const std::string_view if_none_match = req[http::field::if_none_match];
  const bool unchanged =
      !if_none_match.empty() && if_none_match.find(file.etag) != std::string_view::npos;
  Response res(unchanged ? http::status::not_modified : http::status::ok, req.version());
  res.set(http::field::etag, file.etag);
  res.keep_alive(req.keep_alive());
  if (unchanged) {
    return with_dashboard_fields(std::move(res));
  }
  res.set(http::field::content_type, file.content_type);
  if (req.method() == http::verb::head) {
    res.content_length(file.body.size());  // the GET's length, no body
  } else {
    res.body() = std::string(file.body);
    res.prepare_payload();
  }
  return with_dashboard_fields(std::move(res));
}

}  // namespace

std::optional<Response> dashboard_response(const Request& req) {
  std::string_view path = req.target();
  path = path.substr(0, path.find('?'));
  if (path != kDashboardPath && !path.starts_with("/admin/ui/")) {
    return std::nullopt;
  }
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = json_error(req, http::status::method_not_allowed, "method_not_allowed");
    res.set(http::field::allow, "GET, HEAD");
    return with_dashboard_fields(std::move(res));
  }
  if (path == "/admin/ui/") {
    path = kDashboardPath;
  }
  for (const auto& file : dashboard_files()) {
    if (file.path == path) {
      return dashboard_file(req, file);
    }
  }
  return with_dashboard_fields(json_error(req, http::status::not_found, "not_found"));
}

}  // namespace sluice::admin
