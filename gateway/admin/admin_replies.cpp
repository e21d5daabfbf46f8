// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/admin_replies.hpp"

#include <boost/beast/http.hpp>

#include "gateway/admin/admin_api.hpp"
#include "gateway/config/config_loader.hpp"

namespace sluice::admin {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using nlohmann::ordered_json;

// A body problem path ("requests", "routes[0]", "(root)") made relative to `base`, the config
// path where the body lands ("" for the document root).
std::string rebase(std::string_view base, std::string_view relative) {
  if (relative == "(root)" || relative.empty()) {
    return base.empty() ? std::string("(root)") : std::string(base);
  }
  if (base.empty()) {
    return std::string(relative);
  }
  return std::string(base) + (relative.front() == '[' ? "" : ".") + std::string(relative);
}

}  // namespace

Response reply(const Request& req, http::status status, const json& body) {
  Response res(status, req.version());
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  // Replaced, never thrown: a reply must not fail on a stray byte (input is checked anyway).
  res.body() = body.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

Response no_content(const Request& req) {
  Response res(http::status::no_content, req.version());
  res.keep_alive(req.keep_alive());
  return res;
}

Response field_error(const Request& req, std::string_view message, std::string_view field,
                     http::status status) {
  return reply(req, status, {{"error", message}, {"field", field}});
}

Response problems_reply(const Request& req, const std::vector<config::Problem>& problems) {
  json list = json::array();
  for (const auto& p : problems) {
    list.push_back({{"field", p.path}, {"error", p.message}});
  }
  return reply(req, http::status::bad_request,
               {{"error", problems.front().message},
                {"field", problems.front().path},
                {"problems", std::move(list)}});
}

Response not_found(const Request& req, std::string message) {
  return reply(req, http::status::not_found, {{"error", std::move(message)}});
}

Response method_not_allowed(const Request& req, std::string_view allow) {
  auto res = reply(req, http::status::method_not_allowed, {{"error", "method_not_allowed"}});
  res.set(http::field::allow, allow);
  return res;
}

std::variant<ordered_json, Response> read_object(const Request& req, std::string_view base) {
  auto parsed = config::parse_json_text(req.body());
  if (!parsed.problems.empty()) {
    return field_error(req, parsed.problems.front().message,
                       parsed.json ? rebase(base, parsed.problems.front().path) : "(body)");
  }
  if (!parsed.json->is_object()) {
    return field_error(req, "must be an object", rebase(base, ""));
  }
  return std::move(*parsed.json);
}

std::variant<ordered_json, Response> only_member(const Request& req, const ordered_json& body,
                                                 std::string_view base, const std::string& key) {
  for (const auto& [name, value] : body.items()) {
    if (name != key) {
      return field_error(req, "unknown field", config::member_path(base, name));
    }
  }
  if (!body.contains(key)) {
    return field_error(req, "is required", config::member_path(base, key));
  }
  return body.at(key);
}

Response commit_error_reply(const Request& req, const CommitError& error) {
  using Kind = CommitError::Kind;
  switch (error.kind) {
    case Kind::kFileChanged:
      return reply(req, boost::beast::http::status::conflict,
                   {{"error", "config_file_changed"}, {"detail", error.detail}});
    case Kind::kFleetUnavailable:
      return reply(req, boost::beast::http::status::service_unavailable,
                   {{"error", "fleet_unavailable"}, {"detail", error.detail}});
    case Kind::kVersionMismatch:
      return reply(req, boost::beast::http::status::precondition_failed,
                   {{"error", "version_mismatch"}, {"current", error.current}});
    case Kind::kFleetConflict:
      return reply(req, boost::beast::http::status::conflict,
                   {{"error", "fleet_conflict"}, {"detail", error.detail}});
    case Kind::kPersistFailed:
      break;
  }
  return reply(req, boost::beast::http::status::internal_server_error,
               {{"error", "persist_failed"}, {"detail", error.detail}});
}

}  // namespace sluice::admin
