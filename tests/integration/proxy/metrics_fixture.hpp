// SPDX-License-Identifier: Apache-2.0
#pragma once

// GET /metrics integration helpers (docs/behaviour.md "Metrics"): scraping the real binary and
// reading its series. Tests: metrics_test.cpp (every family, a known sequence of requests) and
// metrics_series_test.cpp (upstream outcomes, connections, reloads, promtool).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace metrics_support {

using nlohmann::json;
using std::chrono::milliseconds;

/// The gateway's version, as `sluice --version` prints it ("sluice X" -> "X").
inline std::string gateway_version() {
  const ProcessResult r = run_process({SLUICE_BINARY, "--version"});
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  return out.starts_with("sluice ") ? out.substr(7) : out;
}

/// minimal_gateway_config with identity by X-API-Key (else the client IP), policy "p" of
/// `limit` per minute, a 60 s breaker window (nothing leaves it during a test), and one route
/// "api" (prefix /api, stripped, limited by "p"): anything else has no route.
inline json metrics_config(const std::string& endpoint, int limit) {
  json c = minimal_gateway_config({endpoint});
  c["identity"] = json::array({json{{"header", "X-API-Key"}}, json{{"client_ip", true}}});
  c["limits"] = {{"p", {{"requests", limit}, {"window_ms", 60000}, {"buckets", 60}}}};
  c["backends"]["demo"]["breaker"] = {{"enabled", true}, {"window_ms", 60000}, {"buckets", 60}};
  c["routes"] = json::array({{{"name", "api"},
                              {"prefix", "/api"},
                              {"backend", "demo"},
                              {"strip_prefix", true},
                              {"limit", "p"}}});
  return c;
}

class MetricsTest : public ::testing::Test, protected ProxyFixtureBase {};

}  // namespace metrics_support
}  // namespace sluice::testing
