// SPDX-License-Identifier: Apache-2.0
#include "tests/support/redis_gateway.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/support/wait.hpp"

namespace sluice::testing {

nlohmann::json redis_gateway_config(const std::string& backend_endpoint, std::uint16_t redis_port,
                                    int requests, const char* on_error, int window_ms,
                                    int buckets) {
  nlohmann::json c = minimal_gateway_config({backend_endpoint});
  c["store"] = {{"type", "redis"},
                {"host", "127.0.0.1"},
                {"port", redis_port},
                {"timeout_ms", 100},
                {"on_error", on_error}};
  c["identity"] = nlohmann::json::array({{{"header", "X-API-Key"}}});
  c["limits"] = {{"p", {{"requests", requests}, {"window_ms", window_ms}, {"buckets", buckets}}}};
  c["routes"][0]["limit"] = "p";
  return c;
}

unsigned status_for(HttpClient& client, const std::string& key) {
  return client.get("/ok", {{"X-API-Key", key}}).result_int();
}

void wait_until_using_redis(SluiceProcess& gateway, HttpClient& client) {
  const auto using_redis = wait_until(
      "the gateway's decisions to go to Redis",
      [&] {
        const Scrape s = scrape_metrics(gateway);
        if (s.value("sluice_store_operations_total", {{"store", "redis"}, {"result", "ok"}}) > 0 &&
            s.value("sluice_store_fallback_active", {{"store", "redis"}}) == 0) {
          return true;
        }
        (void)status_for(client, "warm-up");
        return false;
      },
      kDefaultTimeout, std::chrono::milliseconds(20));
  EXPECT_TRUE(using_redis) << gateway.process().output();
}

RedisReplicaPair::RedisReplicaPair(const nlohmann::json& config)
    : a(config), b(config), ca(a.proxy_port()), cb(b.proxy_port()) {
  wait_until_using_redis(a, ca);
  wait_until_using_redis(b, cb);
}

}  // namespace sluice::testing
