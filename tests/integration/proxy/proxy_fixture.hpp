// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/algorithm/string/predicate.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/demo_backend.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sluice_process.hpp"

namespace sluice::testing {

/// The values of header `name` (case-insensitive) in a demo backend /headers reply, in order.
inline std::vector<std::string> header_values(const nlohmann::json& echoed, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& field : echoed.at("headers")) {
    if (boost::algorithm::iequals(field.at(0).get<std::string>(), name)) {
      values.push_back(field.at(1).get<std::string>());
    }
  }
  return values;
}

/// What the demo backend saw of the request: GET `target` through the gateway on `port`.
inline nlohmann::json echoed_request(HttpClient& client, std::string_view target,
                                     const Headers& headers = {}) {
  const Response res = client.get(target, headers);
  if (res.result_int() != 200) {
    throw std::runtime_error("expected 200 from " + std::string(target) + ", got " +
                             std::to_string(res.result_int()) + ": " + res.body());
  }
  return nlohmann::json::parse(res.body());
}

/// The `error` field of a gateway JSON error reply ("" if the body is not one).
inline std::string error_code(const Response& res) {
  const auto body = nlohmann::json::parse(res.body(), nullptr, false);
  return body.is_object() && body.contains("error") && body["error"].is_string()
             ? body["error"].get<std::string>()
             : std::string();
}

/// Switches a demo backend's faults: its `POST /control?QUERY` (health, fail_percent,
/// fail_status, delay_ms; README "Demo backend").
inline void set_faults(const DemoBackend& backend, const std::string& query) {
  HttpClient client(backend.port());
  const Response res = client.request(http::verb::post, "/control?" + query);
  if (res.result_int() != 200) {
    throw std::runtime_error("POST /control?" + query + ": " + res.body());
  }
}

/// One demo backend and a gateway in front of it with minimal_gateway_config, tweakable
/// before start() by editing `config`.
class ProxyFixtureBase {
 public:
  DemoBackend backend;
  nlohmann::json config = minimal_gateway_config({backend.endpoint()});
};

}  // namespace sluice::testing
