// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/demo_routes.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "gateway/demo/decimal.hpp"

namespace sluice::demo {
namespace {

namespace http = boost::beast::http;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kText = "text/plain; charset=utf-8";

/// `/prefix/{n}` with n in [min, max], or kBadRequest.
Route numbered(RouteKind kind, std::string_view rest, std::uint64_t min, std::uint64_t max) {
  const auto n = parse_decimal(rest);
  if (!n || *n < min || *n > max) {
    return {RouteKind::kBadRequest, 0};
  }
  return {kind, *n};
}

/// `/ws/push?n=N&size=S`: both parameters required, in any order; other parameters ignored.
Route push_route(std::string_view target) {
  const auto question = target.find('?');
  std::string_view query = question == std::string_view::npos ? "" : target.substr(question + 1);
  std::optional<std::uint64_t> count;
  std::optional<std::uint64_t> size;
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    const auto eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (name == "n") {
      count = parse_decimal(value);
    } else if (name == "size") {
      size = parse_decimal(value);
    }
  }
  if (!count || !size || *count > kMaxWsPush || *size > kMaxWsMessage) {
    return {RouteKind::kBadRequest, 0};
  }
  return {RouteKind::kWsPush, *count, *size};
}

std::string json_text(const nlohmann::ordered_json& j) {
  // Header bytes are not necessarily UTF-8: replace what isn't rather than throw.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Reply headers_reply(const http::request_header<>& req) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::array();
  for (const auto& field : req) {
    fields.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  const nlohmann::ordered_json body = {{"method", std::string(req.method_string())},
                                       {"target", std::string(req.target())},
                                       {"headers", std::move(fields)}};
  return {200, std::string(kJson), json_text(body), false};
}

/// The 400 of a /control query naming an unknown parameter or giving a bad value.
Reply control_error(const ControlQuery& parsed) {
  nlohmann::ordered_json body = {
      {"error", parsed.error == ParameterError::kUnknown ? "unknown_parameter" : "bad_parameter"},
      {"parameter", parsed.parameter}};
  if (parsed.error == ParameterError::kBadValue) {
    body["expected"] = expected_values(parsed.parameter);
  }
  return {400, std::string(kJson), json_text(body), false};
}

}  // namespace

Route match_route(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  constexpr std::string_view kStatusPrefix = "/status/";
  constexpr std::string_view kSlowPrefix = "/slow/";
  constexpr std::string_view kBytesPrefix = "/bytes/";
  if (path == "/ok") {
    return {RouteKind::kOk, 0};
  }
  if (path == "/echo") {
    return {RouteKind::kEcho, 0};
  }
  if (path == "/count") {
    return {RouteKind::kCount, 0};
  }
  if (path == "/headers" || path.starts_with("/headers/")) {
    return {RouteKind::kHeaders, 0};
  }
  if (path == "/close") {
    return {RouteKind::kClose, 0};
  }
  if (path == "/healthz") {
    return {RouteKind::kHealth, 0};
  }
  if (path == "/control") {
    return {RouteKind::kControl, 0};
  }
  if (path == "/ws/echo") {
    return {RouteKind::kWsEcho, 0};
  }
  if (path == "/ws/push") {
    return push_route(target);
  }
  if (path.starts_with(kStatusPrefix)) {
    return numbered(RouteKind::kStatus, path.substr(kStatusPrefix.size()), 101, 599);
  }
  if (path.starts_with(kSlowPrefix)) {
    const auto max = static_cast<std::uint64_t>(kMaxSlow.count());
    return numbered(RouteKind::kSlow, path.substr(kSlowPrefix.size()), 0, max);
  }
  if (path.starts_with(kBytesPrefix)) {
    return numbered(RouteKind::kBytes, path.substr(kBytesPrefix.size()), 0, UINT64_MAX);
  }
  return {RouteKind::kNotFound, 0};
}

Reply simple_reply(const Route& route, const http::request_header<>& req,
                   std::uint64_t body_bytes) {
  switch (route.kind) {
    case RouteKind::kOk:
      return {200, std::string(kText), "ok\n", false};
    case RouteKind::kCount:
      return {200, std::string(kJson), json_text({{"bytes", body_bytes}}), false};
    case RouteKind::kStatus: {
      const auto status = static_cast<unsigned>(route.number);
      return {status, std::string(kJson), json_text({{"status", status}}), false};
    }
    case RouteKind::kSlow:
      return {200, std::string(kText), "slow\n", false};
    case RouteKind::kHeaders:
      return headers_reply(req);
    case RouteKind::kClose:
      return {200, std::string(kText), "bye\n", true};
    case RouteKind::kEcho:  // only HEAD (or an empty body) lands here
      return {200, echo_content_type(req), "", false};
    case RouteKind::kWsEcho:  // upgrades never get here: this is a plain HTTP request
    case RouteKind::kWsPush:
      return {426, std::string(kJson), R"({"error":"upgrade_required"})", false, true};
    case RouteKind::kBadRequest:
      return {400, std::string(kJson), R"({"error":"bad_request"})", false};
    case RouteKind::kBytes:    // streamed (send_bytes)
    case RouteKind::kHealth:   // stateful: fault_reply
    case RouteKind::kControl:  // stateful: fault_reply
    case RouteKind::kNotFound:
      break;
  }
  return {404, std::string(kJson), R"({"error":"not_found"})", false};
}

Reply fault_reply(const Route& route, const http::request_header<>& req, FaultState& faults) {
  if (route.kind == RouteKind::kHealth) {
    return faults.is_healthy() ? Reply{200, std::string(kJson), R"({"status":"up"})", false}
                               : Reply{503, std::string(kJson), R"({"status":"down"})", false};
  }
  const auto question = req.target().find('?');
  const std::string_view query =
      question == std::string_view::npos ? "" : req.target().substr(question + 1);
  const auto method = req.method();
  if (method == http::verb::post) {
    const ControlQuery parsed = parse_control_query(query);
    if (parsed.error != ParameterError::kNone) {
      return control_error(parsed);
    }
    faults.apply(parsed.update);
  } else if (method != http::verb::get && method != http::verb::head) {
    Reply reply{405, std::string(kJson), R"({"error":"method_not_allowed"})", false};
    reply.allow = "GET, HEAD, POST";
    return reply;
  } else if (!query.empty()) {
    return {400, std::string(kJson), R"({"error":"changes_need_post"})", false};
  }
  return {200, std::string(kJson), settings_json(faults.settings(), faults.capacity().load()),
          false};
}

std::string echo_content_type(const http::request_header<>& req) {
  const auto it = req.find(http::field::content_type);
  return it == req.end() ? std::string("application/octet-stream") : std::string(it->value());
}

}  // namespace sluice::demo
