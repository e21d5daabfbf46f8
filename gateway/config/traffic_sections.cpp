// SPDX-License-Identifier: Apache-2.0
// Traffic sections: limits, overrides, backends (with breakers) and routes, including the cross
// references between them.
#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <utility>

#include "gateway/config/config_sections.hpp"
#include "gateway/config/endpoint.hpp"
#include "gateway/http1/path_normalizer.hpp"

namespace sluice::config::detail {
namespace {

constexpr std::array kLimitModes{LimitMode::kEnforce, LimitMode::kShadow};
constexpr std::array kBalances{Balance::kRoundRobin, Balance::kLeastRequest, Balance::kRandom};
constexpr std::array kUpstreamProtocols{UpstreamProtocol::kHttp1, UpstreamProtocol::kH2,
                                        UpstreamProtocol::kH2c};
constexpr std::uint32_t kMaxRequests = 4294967295U;
constexpr std::uint32_t kMaxConcurrency = 1000000;

// Calls fn(name, ObjectReader&) for every member of the object section `key` (a map of named
// objects), after checking the name; a member that is not an object is reported and skipped.
template <typename Fn>
void for_each_named(ObjectReader& root, std::string_view key, Presence presence, Fn&& fn) {
  const auto* section = root.object(key, presence);
  if (section == nullptr) {
    return;
  }
  const auto section_path = root.path_of(key);
  for (auto it = section->begin(); it != section->end(); ++it) {
    const auto path = member_path(section_path, it.key());
    if (!is_valid_name(it.key())) {
      root.problems().add(path, std::string(kInvalidName));
    }
    if (!it->is_object()) {
      root.problems().add(path, "must be an object");
      continue;
    }
    ObjectReader reader(*it, path, root.problems());
    fn(it.key(), reader);
    reader.finish();
  }
}

LimitPolicyConfig parse_policy(ObjectReader& reader) {
  LimitPolicyConfig policy;
  const auto requests =
      reader.integer<std::uint32_t>("requests", 1, kMaxRequests, Presence::kRequired);
  const auto window = reader.duration_ms("window_ms", 1, 86400000, Presence::kRequired);
  const auto buckets = reader.integer<std::uint32_t>("buckets", 1, 3600);
  policy.mode = reader.enumeration("mode", kLimitModes).value_or(policy.mode);
  check_buckets_divide(reader, window, buckets, policy.buckets);
  policy.requests = requests.value_or(policy.requests);
  policy.window = window.value_or(policy.window);
  policy.buckets = buckets.value_or(policy.buckets);
  return policy;
}

std::vector<int> parse_failure_statuses(ObjectReader& reader, std::vector<int> fallback,
                                        std::string_view key = "failure_statuses", int min = 100,
                                        int max = 599) {
  const auto* list = reader.array(key);
  if (list == nullptr) {
    return fallback;
  }
  std::vector<int> statuses;
  const auto list_path = reader.path_of(key);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto status =
        read_integer((*list)[i], element_path(list_path, i), min, max, reader.problems());
    if (status) {
      statuses.push_back(static_cast<int>(*status));
    }
  }
  return statuses;
}

BreakerConfig parse_breaker(ObjectReader& reader) {
  BreakerConfig breaker;
  breaker.enabled = reader.boolean("enabled").value_or(breaker.enabled);
  breaker.mode = reader.enumeration("mode", kLimitModes).value_or(breaker.mode);
  breaker.slow = reader.duration_ms("slow_ms", 0, 3600000).value_or(breaker.slow);
  breaker.k = reader.number("k", 1.0, 100.0).value_or(breaker.k);
  breaker.protection = reader.number("protection", 0.0, 1000000.0).value_or(breaker.protection);
  const auto window = reader.duration_ms("window_ms", 1, 3600000);
  const auto buckets = reader.integer<std::uint32_t>("buckets", 1, 3600);
  // An absent window_ms is the default window, which buckets must divide too.
  const auto effective_window =
      reader.has("window_ms") ? window : std::optional<std::chrono::milliseconds>(breaker.window);
  check_buckets_divide(reader, effective_window, buckets, breaker.buckets);
  breaker.window = window.value_or(breaker.window);
  breaker.buckets = buckets.value_or(breaker.buckets);
  breaker.failure_statuses = parse_failure_statuses(reader, std::move(breaker.failure_statuses));
  breaker.failure_grpc_statuses = parse_failure_statuses(
      reader, std::move(breaker.failure_grpc_statuses), "failure_grpc_statuses", 1, 16);
  return breaker;
}

std::string lower_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::vector<Endpoint> parse_endpoints(ObjectReader& reader) {
  std::vector<Endpoint> endpoints;
  const auto* list = reader.array("endpoints", Presence::kRequired);
  if (list == nullptr) {
    return endpoints;
  }
  if (list->empty()) {
    reader.report("endpoints", "must list at least one endpoint");
    return endpoints;
  }
  std::set<std::string, std::less<>> seen;  // host names compare case-insensitively
  const auto list_path = reader.path_of("endpoints");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto path = element_path(list_path, i);
    const auto text = read_string((*list)[i], path, reader.problems());
    if (!text) {
      continue;
    }
    auto endpoint = parse_endpoint(*text);
    if (!endpoint.ok()) {
      reader.problems().add(path, std::move(endpoint.error));
    } else if (!seen.insert(lower_case(to_string(*endpoint.value))).second) {
      reader.problems().add(path, "duplicate endpoint");
    } else {
      endpoints.push_back(std::move(*endpoint.value));
    }
  }
  return endpoints;
}

// A backend's `tls` object (docs/tls.md "Upstream TLS"); its files are read when a config
// version is installed (and by --check), not here.
ConcurrencyConfig parse_concurrency(ObjectReader& reader) {
  ConcurrencyConfig concurrency;
  concurrency.enabled = reader.boolean("enabled").value_or(concurrency.enabled);
  concurrency.min =
      reader.integer<std::uint32_t>("min", 1, kMaxConcurrency).value_or(concurrency.min);
  concurrency.max =
      reader.integer<std::uint32_t>("max", 1, kMaxConcurrency).value_or(concurrency.max);
  if (concurrency.min > concurrency.max) {
    reader.report("min", "must not exceed max (" + std::to_string(concurrency.max) + ")");
  }
  return concurrency;
}

BackendTlsConfig parse_backend_tls(ObjectReader& reader) {
  BackendTlsConfig tls;
  tls.enabled = reader.boolean("enabled").value_or(tls.enabled);
  const auto file = [&](std::string_view key) {
    auto name = reader.nullable_string(key);
    if (name && name->empty()) {
      reader.report(key, "must be a file name (or null)");
    }
    return name;
  };
  tls.ca = file("ca");
  tls.verify = reader.boolean("verify").value_or(tls.verify);
  tls.server_name = reader.nullable_string("server_name");
  if (tls.server_name && !is_host_name(*tls.server_name)) {
    reader.report("server_name", "must be a host name (or null: the endpoint's host)");
  }
  tls.cert = file("cert");
  tls.key = file("key");
  if (tls.cert.has_value() != tls.key.has_value()) {
    reader.report(tls.cert ? "key" : "cert",
                  "is needed with the other (a client certificate "
                  "and its key)");
  }
  return tls;
}

BackendConfig parse_backend(ObjectReader& reader) {
  BackendConfig backend;
  backend.endpoints = parse_endpoints(reader);
  backend.balance = reader.enumeration("balance", kBalances).value_or(backend.balance);
  backend.connect_timeout =
      reader.duration_ms("connect_timeout_ms", 1, 600000).value_or(backend.connect_timeout);
  backend.timeout = reader.duration_ms("timeout_ms", 1, 3600000).value_or(backend.timeout);
  backend.max_idle_per_endpoint = reader.integer<std::uint32_t>("max_idle_per_endpoint", 0, 100000)
                                      .value_or(backend.max_idle_per_endpoint);
  reader.nested("breaker", [&](ObjectReader& nested) { backend.breaker = parse_breaker(nested); });
  reader.nested("tls", [&](ObjectReader& nested) { backend.tls = parse_backend_tls(nested); });
  reader.nested("health_check",
                [&](ObjectReader& nested) { backend.health_check = parse_health_check(nested); });
  reader.nested("outlier", [&](ObjectReader& nested) { backend.outlier = parse_outlier(nested); });
  reader.nested("retry", [&](ObjectReader& nested) { backend.retry = parse_retry(nested); });
  reader.nested("concurrency",
                [&](ObjectReader& nested) { backend.concurrency = parse_concurrency(nested); });
  backend.protocol = reader.enumeration("protocol", kUpstreamProtocols).value_or(backend.protocol);
  backend.max_streams_per_connection =
      reader.integer<std::uint32_t>("max_streams_per_connection", 1, 10000)
          .value_or(backend.max_streams_per_connection);
  // h2 is chosen by ALPN in the TLS handshake; h2c is HTTP/2 on a plain connection.
  if (backend.protocol == UpstreamProtocol::kH2 && !backend.speaks_tls()) {
    reader.report("protocol", R"("h2" needs "tls": {"enabled": true} (use "h2c" without TLS))");
  } else if (backend.protocol == UpstreamProtocol::kH2c && backend.speaks_tls()) {
    reader.report("protocol", R"("h2c" is HTTP/2 without TLS (use "h2" with TLS))");
  }
  if (backend.health_check && backend.health_check->type == HealthCheckConfig::Type::kGrpc &&
      backend.protocol == UpstreamProtocol::kHttp1) {
    reader.report("health_check", R"("type": "grpc" needs "protocol": "h2" or "h2c")");
  }
  return backend;
}

// State shared by the routes of one `routes` array.
struct RouteContext {
  bool merge_slashes;
  const KnownNames& backends;
  const KnownNames& policies;
  std::string routes_path;
  std::map<std::string, std::size_t, std::less<>> first_use;  // route name -> index
};

std::vector<std::string> parse_methods(ObjectReader& reader) {
  std::vector<std::string> methods;
  const auto* list = reader.nullable_array("methods");
  if (list == nullptr) {
    return methods;
  }
  const auto list_path = reader.path_of("methods");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto path = element_path(list_path, i);
    auto method = read_string((*list)[i], path, reader.problems());
    if (!method) {
      continue;
    }
    const bool has_lower =
        std::any_of(method->begin(), method->end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (!is_http_token(*method) || has_lower) {
      reader.problems().add(path, R"(not an HTTP method (use upper case, e.g. "GET"))");
    } else {
      methods.push_back(std::move(*method));
    }
  }
  return methods;
}

void read_route_name(ObjectReader& reader, std::size_t index, RouteContext& context,
                     RouteConfig& route) {
  auto name = reader.string("name", Presence::kRequired);
  if (!name) {
    return;
  }
  if (!is_valid_name(*name)) {
    reader.report("name", std::string(kInvalidName));
  } else if (const auto [first, inserted] = context.first_use.emplace(*name, index); !inserted) {
    reader.report("name", "duplicate route name (first used by " +
                              element_path(context.routes_path, first->second) + ")");
  }
  route.name = std::move(*name);
}

RouteConfig parse_route(ObjectReader& reader, std::size_t index, RouteContext& context) {
  RouteConfig route;
  read_route_name(reader, index, context, route);
  if (auto prefix = reader.string("prefix", Presence::kRequired)) {
    if (prefix->empty() || prefix->front() != '/') {
      reader.report("prefix", R"(must start with "/")");
    } else if (const std::string normal = http1::normalized(*prefix, context.merge_slashes);
               normal != *prefix) {
      // Requests are routed by their normalized path, so this prefix could never match.
      reader.report("prefix", normal.empty()
                                  ? std::string("must be a normalized path (docs/paths.md)")
                                  : "must be a normalized path (did you mean \"" + normal + "\"?)");
    }
    route.prefix = std::move(*prefix);
  }
  if (auto backend = reader.string("backend", Presence::kRequired)) {
    if (context.backends && !context.backends->contains(*backend)) {
      reader.report("backend", "no such backend");
    }
    route.backend = std::move(*backend);
  }
  route.limit = reader.nullable_string("limit");
  if (route.limit && context.policies && !context.policies->contains(*route.limit)) {
    reader.report("limit", "no such policy");
  }
  route.methods = parse_methods(reader);
  route.host = reader.nullable_string("host");
  if (route.host && route.host->empty()) {
    reader.report("host", "must not be empty (use null for any host)");
  }
  route.strip_prefix = reader.boolean("strip_prefix").value_or(route.strip_prefix);
  route.upgrades = reader.boolean("upgrades").value_or(route.upgrades);
  constexpr std::array kRouteAuths{RouteAuth::kOff, RouteAuth::kOptional, RouteAuth::kRequired};
  route.auth = reader.enumeration("auth", kRouteAuths).value_or(route.auth);
  route.strip_credentials = reader.boolean("strip_credentials").value_or(route.strip_credentials);
  return route;
}

}  // namespace

std::map<std::string, LimitPolicyConfig> parse_limits(ObjectReader& root) {
  std::map<std::string, LimitPolicyConfig> limits;
  for_each_named(root, "limits", Presence::kOptional,
                 [&](const std::string& name, ObjectReader& reader) {
                   limits.emplace(name, parse_policy(reader));
                 });
  return limits;
}

std::map<std::string, std::map<std::string, std::uint32_t>> parse_requests_by_policy(
    ObjectReader& root, std::string_view section_key, const KnownNames& policies,
    std::string_view empty_name) {
  std::map<std::string, std::map<std::string, std::uint32_t>> out;
  const auto* section = root.object(section_key);
  if (section == nullptr) {
    return out;
  }
  const auto section_path = root.path_of(section_key);
  for (auto policy = section->begin(); policy != section->end(); ++policy) {
    const auto policy_path = member_path(section_path, policy.key());
    if (policies && !policies->contains(policy.key())) {
      root.problems().add(policy_path, "no such policy in limits");
    }
    if (!policy->is_object()) {
      root.problems().add(policy_path, "must be an object");
      continue;
    }
    auto& names = out[policy.key()];
    for (auto name = policy->begin(); name != policy->end(); ++name) {
      const auto name_path = member_path(policy_path, name.key());
      if (name.key().empty()) {
        root.problems().add(name_path, std::string(empty_name));
      }
      if (!name->is_object()) {
        root.problems().add(name_path, "must be an object");
        continue;
      }
      ObjectReader reader(*name, name_path, root.problems());
      const auto requests =
          reader.integer<std::uint32_t>("requests", 0, kMaxRequests, Presence::kRequired);
      reader.finish();
      if (requests) {
        names.emplace(name.key(), *requests);
      }
    }
  }
  return out;
}

std::map<std::string, std::map<std::string, std::uint32_t>> parse_overrides(
    ObjectReader& root, const KnownNames& policies) {
  return parse_requests_by_policy(root, "overrides", policies, "empty key");
}

std::optional<std::map<std::string, std::map<std::string, std::uint32_t>>> read_plain_overrides(
    const nlohmann::ordered_json& section) {
  if (!section.is_object()) {
    return std::nullopt;
  }
  std::map<std::string, std::map<std::string, std::uint32_t>> out;
  for (const auto& [policy, names] : section.items()) {
    if (!names.is_object()) {
      return std::nullopt;
    }
    auto& read = out[policy];
    for (const auto& [name, value] : names.items()) {
      if (name.empty() || !value.is_object() || value.size() != 1) {
        return std::nullopt;
      }
      const auto requests = value.find("requests");
      if (requests == value.end() || !requests->is_number_integer()) {
        return std::nullopt;
      }
      std::uint32_t number = 0;
      if (requests->is_number_unsigned()) {
        const auto unsigned_value = requests->get<std::uint64_t>();
        if (unsigned_value > kMaxRequests) {
          return std::nullopt;
        }
        number = static_cast<std::uint32_t>(unsigned_value);
      } else {
        const auto signed_value = requests->get<std::int64_t>();
        if (signed_value < 0 || signed_value > std::int64_t{kMaxRequests}) {
          return std::nullopt;
        }
        number = static_cast<std::uint32_t>(signed_value);
      }
      read.emplace(name, number);
    }
  }
  return out;
}

std::map<std::string, BackendConfig> parse_backends(ObjectReader& root) {
  std::map<std::string, BackendConfig> backends;
  for_each_named(root, "backends", Presence::kRequired,
                 [&](const std::string& name, ObjectReader& reader) {
                   backends.emplace(name, parse_backend(reader));
                 });
  return backends;
}

std::vector<RouteConfig> parse_routes(ObjectReader& root, bool merge_slashes,
                                      const KnownNames& backends, const KnownNames& policies) {
  std::vector<RouteConfig> routes;
  const auto* list = root.array("routes", Presence::kRequired);
  if (list == nullptr) {
    return routes;
  }
  RouteContext context{merge_slashes, backends, policies, root.path_of("routes"), {}};
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto path = element_path(context.routes_path, i);
    const auto& element = (*list)[i];
    if (!element.is_object()) {
      root.problems().add(path, "must be an object");
      continue;
    }
    ObjectReader reader(element, path, root.problems());
    routes.push_back(parse_route(reader, i, context));
    reader.finish();
  }
  return routes;
}

}  // namespace sluice::config::detail
