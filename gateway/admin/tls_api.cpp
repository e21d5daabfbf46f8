// SPDX-License-Identifier: Apache-2.0
// The TLS part of the admin API (docs/tls.md "Rotating certificates"; dry runs:
// docs/operating.md "Dry runs").
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gateway/admin/admin_api.hpp"
#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_replies.hpp"
#include "gateway/insight/config_changes.hpp"

namespace sluice::admin {

namespace http = boost::beast::http;
using nlohmann::json;

// /admin/tls (what is served) and /admin/tls/reload (docs/tls.md "Rotating certificates").
Response AdminApi::route_tls(const Call& call) {
  const auto& s = call.segments;
  const auto& req = call.req;
  if (s.size() == 1) {
    return req.method() == http::verb::get
               ? reply(req, http::status::ok, context_.tls_certificates())
               : method_not_allowed(req, "GET");
  }
  if (s.size() != 2 || s[1] != "reload") {
    return not_found(req, "no such admin resource");
  }
  if (req.method() != http::verb::post) {
    return method_not_allowed(req, "POST");
  }
  json would_serve;
  const json before = context_.tls_certificates();
  if (auto error = call.dry_run ? context_.tls_preview(would_serve) : context_.tls_reload()) {
    log_->error("admin tls reload{} failed peer={} problem={}", call.dry_run ? " dry run" : "",
                show(call.peer), *error);
    json body = context_.tls_certificates();
    body["error"] = "tls_reload_failed";
    body["detail"] = *error;
    return reply(req, http::status::internal_server_error, body);
  }
  const auto identity = [](std::string_view key) { return std::string(key); };
  const json after = call.dry_run ? would_serve : context_.tls_certificates();
  const auto changes = insight::config_changes(before, after, identity);
  if (call.dry_run) {
    return reply(req, http::status::ok,
                 {{"dry_run", true}, {"changes", insight::to_json(changes)}});
  }
  log_->info("admin tls reload peer={}", show(call.peer));
  audit(call, nullptr, "tls", "tls", changes);
  return reply(req, http::status::ok, after);
}

}  // namespace sluice::admin
