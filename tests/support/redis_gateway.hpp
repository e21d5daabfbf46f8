// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/http_client.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/sluice_process.hpp"

// What the tests of gateways on a Redis store (standalone or cluster) share.
namespace sluice::testing {

/// A gateway config with one policy "p" on every route, identity by X-API-Key, and
/// `store.type: "redis"` at 127.0.0.1:`redis_port` (timeout 100 ms).
[[nodiscard]] nlohmann::json redis_gateway_config(const std::string& backend_endpoint,
                                                  std::uint16_t redis_port, int requests,
                                                  const char* on_error = "local",
                                                  int window_ms = 60000, int buckets = 10);

/// The status of GET /ok as user `key` (X-API-Key).
[[nodiscard]] unsigned status_for(HttpClient& client, const std::string& key);

/// Sends requests (user "warm-up") until the gateway's decisions go to Redis: an `ok` store
/// operation and no fallback. Adds a test failure after kDefaultTimeout.
void wait_until_using_redis(SluiceProcess& gateway, HttpClient& client);

/// Two replicas started on one config, a client on each, both deciding by Redis once built.
struct RedisReplicaPair {
  explicit RedisReplicaPair(const nlohmann::json& config);

  SluiceProcess a;
  SluiceProcess b;
  HttpClient ca;
  HttpClient cb;
};

}  // namespace sluice::testing
