// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/admin_api.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <utility>

#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_path.hpp"
#include "gateway/admin/admin_replies.hpp"
#include "gateway/admin/dashboard.hpp"
#include "gateway/config/config_json.hpp"

namespace sluice::admin {

namespace net = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;
using nlohmann::ordered_json;

std::string show(const net::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  return (address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" +
         std::to_string(endpoint.port());
}

namespace {

constexpr std::size_t kMaxLoggedChange = 1024;  // characters of a change's diff in the log

// What changed, as a JSON Patch from `before` to `after`, cut to a log-friendly length.
std::string short_diff(const json& before, const json& after) {
  std::string diff = json::diff(before, after).dump(-1, ' ', false, json::error_handler_t::replace);
  if (diff.size() > kMaxLoggedChange) {
    diff.resize(kMaxLoggedChange);
    diff += "...";
  }
  return diff;
}

json policy_view(const config::Config& c, const std::string& policy) {
  const auto it = c.limits.find(policy);
  return it == c.limits.end() ? json(nullptr) : config::to_json(it->second);
}

json override_view(const config::Config& c, const std::string& policy, const std::string& key) {
  const auto keys = c.overrides.find(policy);
  if (keys == c.overrides.end()) {
    return nullptr;
  }
  const auto it = keys->second.find(key);
  return it == keys->second.end() ? json(nullptr) : json{{"requests", it->second}};
}

std::string route_using(const config::Config& c, const std::string& policy, std::size_t& index) {
  for (index = 0; index < c.routes.size(); ++index) {
    if (c.routes[index].limit == policy) {
      return c.routes[index].name;
    }
  }
  return {};
}

}  // namespace

const std::vector<std::string_view>& AdminApi::resources() {
  static const std::vector<std::string_view> resources{"limits",    "overrides", "breaker",
                                                       "endpoints", "routes",    "endpoint_state",
                                                       "rollback",  "auth_keys"};
  return resources;
}

AdminApi::AdminApi(AdminContext context, BearerAuth auth, std::shared_ptr<spdlog::logger> log)
    : context_(std::move(context)), auth_(auth), log_(std::move(log)) {}

net::awaitable<Reply> AdminApi::handle(const Request& req, const net::ip::tcp::endpoint& peer) {
  if (auto page = dashboard_response(req)) {
    co_return std::move(*page);  // no token: the page holds no data, each call it makes needs one
  }
  if (!auth_.allows(req[http::field::authorization])) {
    note_unauthorized(peer, req.method_string());
    auto res = reply(req, http::status::unauthorized, {{"error", "unauthorized"}});
    res.set(http::field::www_authenticate, R"(Bearer realm="sluice-admin")");
    co_return res;
  }
  auto segments = path_segments(req.target());
  if (!segments) {
    co_return field_error(req, "malformed percent-encoding or UTF-8 in the path", "(path)");
  }
  segments->erase(segments->begin());  // "admin"
  const auto dry_run = query_parameter(req.target(), "dry_run");
  if (dry_run && *dry_run != "true" && *dry_run != "false") {
    co_return field_error(req, "must be true or false", "(query) dry_run");
  }
  const Call call{req, peer, std::move(*segments), dry_run == "true"};
  const auto& s = call.segments;
  if (s.size() == 1 && s[0] == "events") {
    co_return events(call);
  }
  if (s.size() == 4 && s[0] == "limits" && s[2] == "keys") {
    if (req.method() != http::verb::get) {
      co_return method_not_allowed(req, "GET");
    }
    co_return co_await key_state(call, s[1], s[3]);
  }
  co_return route(call);
}

void AdminApi::note_unauthorized(const net::ip::tcp::endpoint& peer, std::string_view method) {
  // At most one line a second, so a client hammering the API with a bad token cannot flood the
  // log; the next line says how many were folded into it. The path is never logged: a key
  // lookup's path holds a raw user key.
  const core::TimePoint now = context_.clock.now();
  if (now < next_unauthorized_log_) {
    ++unauthorized_suppressed_;
    return;
  }
  next_unauthorized_log_ = now + std::chrono::seconds(1);
  log_->warn("admin unauthorized peer={} method={} suppressed_since_last={}", show(peer),
             std::string(method), std::exchange(unauthorized_suppressed_, 0));
}

Response AdminApi::route(const Call& call) {
  const auto& s = call.segments;
  const auto& req = call.req;
  const config::Config& c = context_.current().config();
  const auto get_only = [&](auto&& answer) {
    return req.method() == http::verb::get ? answer() : method_not_allowed(req, "GET");
  };
  if (s.size() == 1 && s[0] == "config") {
    return get_only([&] { return reply(req, http::status::ok, config::to_json(c)); });
  }
  if (s.size() > 1 && s[0] == "config") {
    return route_config(call);
  }
  if (s.size() == 1 && s[0] == "fleet") {
    return get_only([&] {
      return context_.fleet ? reply(req, http::status::ok, context_.fleet())
                            : not_found(req, "the fleet is off (fleet.enabled)");
    });
  }
  if (s.size() == 1 && s[0] == "limits") {
    return get_only([&] { return reply(req, http::status::ok, config::limits_json(c)); });
  }
  if (s.size() == 3 && s[0] == "limits" && s[2] == "top") {
    return get_only([&] { return top_users(call, s[1]); });
  }
  if ((s.size() == 2 && s[0] == "limits") ||
      (s.size() == 4 && s[0] == "limits" && s[2] == "overrides")) {
    return route_limits(call);
  }
  if (s.size() == 1 && s[0] == "backends") {
    return get_only([&] { return backends(call); });
  }
  if (s.size() == 3 && s[0] == "backends" && (s[2] == "breaker" || s[2] == "endpoints")) {
    return route_backend(call);
  }
  if (s.size() == 5 && s[0] == "backends" && s[2] == "endpoints" && s[4] == "state") {
    return req.method() == http::verb::put ? put_endpoint_state(call, s[1], s[3])
                                           : method_not_allowed(req, "PUT");
  }
  if (s.size() == 1 && s[0] == "routes") {
    switch (req.method()) {
      case http::verb::get:
        return reply(req, http::status::ok, {{"routes", config::routes_json(c)}});
      case http::verb::put:
        return put_routes(call);
      default:
        return method_not_allowed(req, "GET, PUT");
    }
  }
  if (!s.empty() && s[0] == "tls") {
    return route_tls(call);
  }
  if ((s.size() == 2 || s.size() == 3) && s[0] == "auth" && s[1] == "keys") {
    return route_auth_keys(call);
  }
  if (s.size() == 2 && s[0] == "insight" && s[1] == "breakers") {
    return breaker_history(call);
  }
  return not_found(req, "no such admin resource");
}

// /admin/limits/{policy} and /admin/limits/{policy}/overrides/{key}.
Response AdminApi::route_limits(const Call& call) {
  const auto& s = call.segments;
  const config::Config& c = context_.current().config();
  const bool is_override = s.size() == 4;
  switch (call.req.method()) {
    case http::verb::get: {
      const json view = is_override ? override_view(c, s[1], s[3]) : policy_view(c, s[1]);
      if (!view.is_null()) {
        return reply(call.req, http::status::ok, view);
      }
      return not_found(
          call.req, is_override ? "no override for this key" : "no policy named \"" + s[1] + "\"");
    }
    case http::verb::put:
      return is_override ? put_override(call, s[1], s[3]) : put_policy(call, s[1]);
    case http::verb::delete_:
      return is_override ? delete_override(call, s[1], s[3]) : delete_policy(call, s[1]);
    default:
      return method_not_allowed(call.req, "GET, PUT, DELETE");
  }
}

// /admin/backends/{backend}/breaker and /admin/backends/{backend}/endpoints.
Response AdminApi::route_backend(const Call& call) {
  const auto& s = call.segments;
  const bool is_breaker = s[2] == "breaker";
  switch (call.req.method()) {
    case http::verb::get: {
      const config::Config& c = context_.current().config();
      const auto backend = c.backends.find(s[1]);
      if (backend == c.backends.end()) {
        return not_found(call.req, "no backend named \"" + s[1] + "\"");
      }
      return is_breaker
                 ? reply(call.req, http::status::ok, config::to_json(backend->second.breaker))
                 : endpoint_states(call, s[1]);
    }
    case http::verb::put:
      return is_breaker ? put_breaker(call, s[1]) : put_endpoints(call, s[1]);
    default:
      return method_not_allowed(call.req, "GET, PUT");
  }
}

Response AdminApi::put_policy(const Call& call, const std::string& policy) {
  const std::string base = config::member_path("limits", policy);
  auto body = read_object(call.req, base);
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  ordered_json next = context_.current().json();
  next["limits"][policy] = std::move(std::get<ordered_json>(body));
  return apply(call, std::move(next), "limits", policy,
               [&](const config::Config& c) { return policy_view(c, policy); });
}

Response AdminApi::delete_policy(const Call& call, const std::string& policy) {
  const config::Config& c = context_.current().config();
  if (!c.limits.contains(policy)) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  std::size_t index = 0;
  if (const auto route = route_using(c, policy, index); !route.empty()) {
    return field_error(call.req, "policy \"" + policy + "\" is used by route \"" + route + "\"",
                       config::element_path("routes", index) + ".limit", http::status::conflict);
  }
  ordered_json next = context_.current().json();
  next["limits"].erase(policy);
  if (next.contains("overrides")) {
    next["overrides"].erase(policy);  // its overrides go with it
  }
  return apply(call, std::move(next), "limits", policy,
               [&](const config::Config& after) { return policy_view(after, policy); });
}

Response AdminApi::put_override(const Call& call, const std::string& policy,
                                const std::string& key) {
  if (!context_.current().config().limits.contains(policy)) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  const std::string base = config::member_path(config::member_path("overrides", policy), key);
  auto body = read_object(call.req, base);
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  ordered_json next = context_.current().json();
  next["overrides"][policy][key] = std::move(std::get<ordered_json>(body));
  return apply(call, std::move(next), "overrides", policy + "/" + context_.key_label(key),
               [&](const config::Config& c) { return override_view(c, policy, key); });
}

Response AdminApi::delete_override(const Call& call, const std::string& policy,
                                   const std::string& key) {
  const config::Config& c = context_.current().config();
  if (!c.limits.contains(policy)) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  if (override_view(c, policy, key).is_null()) {
    return not_found(call.req, "no override for this key");
  }
  ordered_json next = context_.current().json();
  ordered_json& keys = next["overrides"][policy];
  keys.erase(key);
  if (keys.empty()) {
    next["overrides"].erase(policy);
  }
  return apply(call, std::move(next), "overrides", policy + "/" + context_.key_label(key),
               [&](const config::Config& after) { return override_view(after, policy, key); });
}

net::awaitable<Response> AdminApi::key_state(const Call& call, const std::string& policy,
                                             const std::string& key) {
  const auto id = context_.current().config().limits.contains(policy) ? context_.store.find(policy)
                                                                      : std::nullopt;
  if (!id) {
    co_return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  auto state = context_.store.try_inspect(context_.store_slot, *id, key);
  if (!state) {
    state = co_await context_.store.inspect(context_.store_slot, *id, key, net::use_awaitable);
  }
  co_return reply(
      call.req, http::status::ok,
      {{"key", key},
       {"count", state->count},
       {"limit", state->limit},
       {"remaining", state->remaining},
       {"reset_ms", std::chrono::ceil<std::chrono::milliseconds>(state->reset).count()}});
}

Response AdminApi::backends(const Call& call) {
  json out = json::object();
  for (const auto& [name, backend] : context_.current().config().backends) {
    breaker::BreakerSnapshot window;
    if (const auto breaker = context_.breakers.find(name)) {
      window = breaker->snapshot();  // the very window the breaker decides on
    }
    out[name] = {{"endpoints", config::endpoints_json(backend)},
                 {"balance", config::to_string(backend.balance)},
                 {"breaker", config::to_json(backend.breaker)},
                 {"window",
                  {{"requests", window.requests},
                   {"accepts", window.accepts},
                   {"drop_probability", window.drop_probability},
                   {"drops", window.drops},
                   {"shadow_drops", window.shadow_drops}}}};
    if (backend.concurrency) {
      json state = {{"config",
                     {{"enabled", backend.concurrency->enabled},
                      {"min", backend.concurrency->min},
                      {"max", backend.concurrency->max}}}};
      if (const auto limit = context_.breakers.find_concurrency(name)) {
        const breaker::ConcurrencySnapshot now = limit->snapshot();
        state["limit"] = now.limit;
        state["in_flight"] = now.in_flight;
        state["rejections"] = now.rejections;
        state["min_rtt_ms"] = now.min_rtt_ms;
        state["recent_rtt_ms"] = now.recent_rtt_ms;
        state["probing"] = now.probing;
      }
      out[name]["concurrency"] = std::move(state);
    }
  }
  return reply(call.req, http::status::ok, out);
}

Response AdminApi::put_breaker(const Call& call, const std::string& backend) {
  if (!context_.current().config().backends.contains(backend)) {
    return not_found(call.req, "no backend named \"" + backend + "\"");
  }
  const std::string base = config::member_path(config::member_path("backends", backend), "breaker");
  auto body = read_object(call.req, base);
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  ordered_json next = context_.current().json();
  ordered_json& breaker = next["backends"][backend]["breaker"];
  if (!breaker.is_object()) {
    breaker = ordered_json::object();
  }
  for (auto& [field, value] : std::get<ordered_json>(body).items()) {
    breaker[field] = value;  // partial: what the body does not name stays as it was
  }
  return apply(call, std::move(next), "breaker", backend, [&](const config::Config& c) {
    return config::to_json(c.backends.at(backend).breaker);
  });
}

Response AdminApi::put_endpoints(const Call& call, const std::string& backend) {
  if (!context_.current().config().backends.contains(backend)) {
    return not_found(call.req, "no backend named \"" + backend + "\"");
  }
  const std::string base = config::member_path("backends", backend);
  auto body = read_object(call.req, base);
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  auto endpoints = only_member(call.req, std::get<ordered_json>(body), base, "endpoints");
  if (auto* error = std::get_if<Response>(&endpoints)) {
    return std::move(*error);
  }
  ordered_json next = context_.current().json();
  next["backends"][backend]["endpoints"] = std::move(std::get<ordered_json>(endpoints));
  return apply(call, std::move(next), "endpoints", backend, [&](const config::Config& c) {
    return json{{"endpoints", config::endpoints_json(c.backends.at(backend))}};
  });
}

Response AdminApi::put_routes(const Call& call) {
  auto body = read_object(call.req, "");
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  auto routes = only_member(call.req, std::get<ordered_json>(body), "", "routes");
  if (auto* error = std::get_if<Response>(&routes)) {
    return std::move(*error);
  }
  ordered_json next = context_.current().json();
  next["routes"] = std::move(std::get<ordered_json>(routes));
  return apply(call, std::move(next), "routes", "routes", [](const config::Config& c) {
    return json{{"routes", config::routes_json(c)}};
  });
}

Response AdminApi::apply(const Call& call, ordered_json next, std::string_view resource,
                         const std::string& subject, const ViewFn& view) {
  const json before = view(context_.current().config());
  auto outcome = change(call, std::move(next), resource, subject, insight::VersionSource::kAdmin);
  if (auto* answer = std::get_if<Response>(&outcome)) {
    return std::move(*answer);
  }
  const json after = view(context_.current().config());  // the config just committed
  log_->info("admin change peer={} resource={} name={} version={} change={}", show(call.peer),
             resource, subject, std::get<Committed>(outcome).version, short_diff(before, after));
  return after.is_null() ? no_content(call.req) : reply(call.req, http::status::ok, after);
}

}  // namespace sluice::admin
