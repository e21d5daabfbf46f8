// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/metrics/metrics.hpp"

namespace sluice::proxy {

struct RouteLimit;

/// One route, compiled for matching (docs/behaviour.md "Routing").
struct Route {
  std::string name;
  std::string prefix;
  std::optional<std::string> host;   ///< lower case, without a port
  std::vector<std::string> methods;  ///< empty = any; GET implies HEAD
  std::size_t backend = 0;           ///< index into the snapshot's backends
  std::optional<std::string> limit;  ///< policy name
  bool strip_prefix = false;
  bool upgrades = true;  ///< Upgrade requests become tunnels (docs/upgrades.md)
  config::RouteAuth auth = config::RouteAuth::kOff;  ///< docs/identity.md "Routes"
  bool strip_credentials = false;            ///< Authorization and the API key header stay here
  const RouteLimit* rate_limit = nullptr;    ///< the compiled policy (owned by the snapshot)
  metrics::RouteMetrics* metrics = nullptr;  ///< null only in router unit tests
};

struct RouteMatch {
  enum class Kind { kMatched, kNoRoute, kMethodNotAllowed };
  Kind kind = Kind::kNoRoute;
  const Route* route = nullptr;
  std::string allow;  ///< for kMethodNotAllowed: the methods the path accepts, for `Allow`
};

/// Ordered first-match routing: the first route whose host (if set), methods (if set) and
/// segment-aware path prefix all match (`/api/users` matches `/api/users` and `/api/users/7`,
/// not `/api/usersX`). A path some route accepts with another method gives 405 with `Allow`.
/// Immutable after construction, hence thread-safe.
class Router {
 public:
  explicit Router(std::vector<Route> routes) : routes_(std::move(routes)) {}

  /// `path` is the request's normalized path (no query); `host` the request's authority (the
  /// absolute-form target's, else the Host field).
  [[nodiscard]] RouteMatch match(std::string_view host, std::string_view method,
                                 std::string_view path) const;

  /// For `OPTIONS *` (asterisk-form, no path): the first route whose host (if set) matches and
  /// whose `methods` list OPTIONS by name; null when none does (docs/http-conformance.md).
  [[nodiscard]] const Route* match_asterisk(std::string_view host) const;

  [[nodiscard]] const std::vector<Route>& routes() const noexcept { return routes_; }

 private:
  std::vector<Route> routes_;
};

/// The target forwarded upstream: the normalized `path` (with `strip_prefix`, what follows the
/// route prefix, always starting with `/`) followed by `query`. Composed in `scratch`.
[[nodiscard]] std::string_view upstream_target(const Route& route, std::string_view path,
                                               std::string_view query, std::string& scratch);

/// True when `prefix` matches `path` on a segment boundary.
[[nodiscard]] bool prefix_matches(std::string_view prefix, std::string_view path) noexcept;

/// A host reduced for matching: lower case, port removed (also from `[v6]:port`), one trailing
/// dot removed (`api.example.` is `api.example`).
[[nodiscard]] std::string normalize_host(std::string_view host);

}  // namespace sluice::proxy
