// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/router.hpp"

#include <algorithm>
#include <cctype>

namespace sluice::proxy {
namespace {

bool method_allowed(const Route& route, std::string_view method) {
  if (route.methods.empty()) {
    return true;
  }
  const auto has = [&](std::string_view m) {
    return std::find(route.methods.begin(), route.methods.end(), m) != route.methods.end();
  };
  return has(method) || (method == "HEAD" && has("GET"));
}

void add_allowed(const Route& route, std::vector<std::string_view>& allow) {
  const auto add = [&](std::string_view m) {
    if (std::find(allow.begin(), allow.end(), m) == allow.end()) {
      allow.push_back(m);
    }
  };
  for (const auto& m : route.methods) {
    add(m);
    if (m == "GET") {
      add("HEAD");
    }
  }
}

/// Whether a route's host (if set) is the request's; the request's host is normalized once,
/// when the first route with a host asks.
class HostFilter {
 public:
  explicit HostFilter(std::string_view host) : host_(host) {}
  [[nodiscard]] bool accepts(const Route& route) {
    if (!route.host) {
      return true;
    }
    if (!normalized_) {
      normalized_host_ = normalize_host(host_);
      normalized_ = true;
    }
    return *route.host == normalized_host_;
  }

 private:
  std::string_view host_;
  std::string normalized_host_;
  bool normalized_ = false;
};

}  // namespace

bool prefix_matches(std::string_view prefix, std::string_view path) noexcept {
  if (!path.starts_with(prefix)) {
    return false;
  }
  return path.size() == prefix.size() || prefix.ends_with('/') || path[prefix.size()] == '/';
}

std::string normalize_host(std::string_view host) {
  std::string_view name = host;
  if (name.starts_with('[')) {
    const auto close = name.find(']');
    name = close == std::string_view::npos ? name : name.substr(1, close - 1);
  } else if (const auto colon = name.rfind(':');
             colon != std::string_view::npos && name.find(':') == colon) {
    name = name.substr(0, colon);  // one colon: host:port (several would be a bare IPv6)
  }
  if (name.size() > 1 && name.ends_with('.')) {
    name.remove_suffix(1);  // a fully qualified name names the same host
  }
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const Route* Router::match_asterisk(std::string_view host) const {
  HostFilter host_filter(host);
  for (const Route& route : routes_) {
    const bool names_options =
        std::find(route.methods.begin(), route.methods.end(), "OPTIONS") != route.methods.end();
    if (names_options && host_filter.accepts(route)) {
      return &route;
    }
  }
  return nullptr;
}

RouteMatch Router::match(std::string_view host, std::string_view method,
                         std::string_view path) const {
  HostFilter host_filter(host);
  std::vector<std::string_view> allow;
  for (const Route& route : routes_) {
    if (!prefix_matches(route.prefix, path) || !host_filter.accepts(route)) {
      continue;
    }
    if (method_allowed(route, method)) {
      return {RouteMatch::Kind::kMatched, &route, {}};
    }
    add_allowed(route, allow);
  }
  if (allow.empty()) {
    return {};
  }
  RouteMatch m{RouteMatch::Kind::kMethodNotAllowed, nullptr, {}};
  for (const auto& a : allow) {
    m.allow += m.allow.empty() ? "" : ", ";
    m.allow += a;
  }
  return m;
}

std::string_view upstream_target(const Route& route, std::string_view path, std::string_view query,
                                 std::string& scratch) {
  std::string_view tail = path;
  if (route.strip_prefix) {
    tail = path.substr(std::min(path.size(), route.prefix.size()));
  }
  const bool slash = !tail.starts_with('/');
  scratch.clear();
  scratch.reserve(tail.size() + query.size() + 1);
  if (slash) {
    scratch += '/';
  }
  scratch += tail;
  scratch += query;
  return scratch;
}

}  // namespace sluice::proxy
