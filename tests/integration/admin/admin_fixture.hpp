// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/admin_client.hpp"
#include "tests/support/demo_backend.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sluice_process.hpp"

namespace sluice::testing {

inline constexpr const char* kAdminTokenEnv = "SLUICE_TEST_ADMIN_TOKEN";
inline constexpr const char* kAdminToken = "t0ken-for-tests";

/// A gateway in front of one demo backend with an admin token (from kAdminTokenEnv), a limit
/// policy "p" (`requests` per 60 s in 10 buckets) on its only route "all", and X-API-Key as the
/// identity. Tests edit `config` before start().
class AdminFixture : public ::testing::Test {
 protected:
  DemoBackend backend;
  nlohmann::json config = admin_config(backend.endpoint(), 5);

  static nlohmann::json admin_config(const std::string& endpoint, int requests) {
    nlohmann::json c = minimal_gateway_config({endpoint});
    c["admin"]["token_env"] = kAdminTokenEnv;
    c["identity"] = nlohmann::json::array({{{"header", "X-API-Key"}}});
    c["limits"] = {{"p", {{"requests", requests}, {"window_ms", 60000}, {"buckets", 10}}}};
    c["routes"][0]["limit"] = "p";
    return c;
  }

  static SluiceProcess::Options with_token() {
    SluiceProcess::Options options;
    options.env = {{kAdminTokenEnv, kAdminToken}};
    return options;
  }

  std::unique_ptr<SluiceProcess> start() {
    return std::make_unique<SluiceProcess>(config, with_token());
  }

  static AdminClient admin(const SluiceProcess& gateway) {
    return AdminClient(gateway.admin_port(), std::string(kAdminToken));
  }

  /// GET `target` through the gateway as the user `key`: the status.
  static unsigned status_for(HttpClient& client, const std::string& key,
                             std::string_view target = "/ok") {
    return client.get(target, {{"X-API-Key", key}}).result_int();
  }
};

}  // namespace sluice::testing
