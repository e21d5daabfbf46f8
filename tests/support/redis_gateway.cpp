// SPDX-License-Identifier: Apache-2.0
#include "tests/support/redis_gateway.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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

double gateway_metric(const SluiceProcess& gateway, const char* name, Labels labels) {
  return metric_value(scrape_metrics(gateway), name, std::move(labels));
}

void wait_until_using_redis(SluiceProcess& gateway, HttpClient& client) {
  const auto deadline = std::chrono::steady_clock::now() + kDefaultTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const double ok = gateway_metric(gateway, "sluice_store_operations_total",
                                     {{"store", "redis"}, {"result", "ok"}});
    if (ok > 0 &&
        gateway_metric(gateway, "sluice_store_fallback_active", {{"store", "redis"}}) == 0) {
      return;
    }
    (void)status_for(client, "warm-up");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "the gateway never decided through Redis:\n" << gateway.process().output();
}

}  // namespace sluice::testing
