// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>

#include "gateway/config/config.hpp"

// The validated Config written back as JSON in the shape of docs/behaviour.md "Configuration",
// every default spelled out: what `GET /admin/config` and the other admin reads show.
// parse_config(to_json(c)) == c for every valid Config. Stateless functions; thread-safe.
namespace sluice::config {

[[nodiscard]] nlohmann::json to_json(const Config& config);
[[nodiscard]] nlohmann::json to_json(const LimitPolicyConfig& policy);
[[nodiscard]] nlohmann::json to_json(const BreakerConfig& breaker);
[[nodiscard]] nlohmann::json to_json(const BackendConfig& backend);
[[nodiscard]] nlohmann::json to_json(const RouteConfig& route);

/// The `limits` section: {NAME: policy, ...}.
[[nodiscard]] nlohmann::json limits_json(const Config& config);
/// The `routes` array, in match order.
[[nodiscard]] nlohmann::json routes_json(const Config& config);
/// A backend's endpoints as "host:port" strings.
[[nodiscard]] nlohmann::json endpoints_json(const BackendConfig& backend);

}  // namespace sluice::config
