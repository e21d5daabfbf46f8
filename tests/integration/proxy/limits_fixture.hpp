// SPDX-License-Identifier: Apache-2.0
#pragma once

// Rate-limit integration helpers (docs/behaviour.md "Limits"): policies and configs, the
// RateLimit fields parsed, and the full check of a limited reply. Tests: limits_test.cpp (counting,
// windows, shadow mode, overrides, threads, reloads) and limits_identity_test.cpp (who a request
// counts as, and what the access log shows of a user).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace limits_support {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// A `limits` policy object.
inline json policy(int requests, int window_ms = 60000, int buckets = 60,
                   const char* mode = "enforce") {
  return {{"requests", requests}, {"window_ms", window_ms}, {"buckets", buckets}, {"mode", mode}};
}

/// minimal_gateway_config over `endpoint` with the documented identity chain (X-API-Key, then a
/// bearer token, then the client IP), policy "p" and the catch-all route limited by it.
inline json limited_config(const std::string& endpoint, const json& p) {
  json c = minimal_gateway_config({endpoint});
  c["identity"] = json::array(
      {json{{"header", "X-API-Key"}}, json{{"bearer", true}}, json{{"client_ip", true}}});
  c["limits"] = {{"p", p}};
  c["routes"][0]["limit"] = "p";
  return c;
}

/// A parsed `RateLimit` or `RateLimit-Policy` field: `"NAME";key=INT;key=INT...`.
struct LimitField {
  std::string policy;
  std::map<std::string, long long> params;

  [[nodiscard]] long long at(const std::string& key) const {
    const auto it = params.find(key);
    if (it == params.end()) {
      throw std::runtime_error("no parameter " + key + " in the field");
    }
    return it->second;
  }
};

/// Parses `"p";q=3;w=60` (spaces after ';' tolerated, as structured fields allow); nullopt if
/// the text is not of that shape.
inline std::optional<LimitField> parse_limit_field(std::string_view text) {
  LimitField field;
  if (text.size() < 2 || text.front() != '"') {
    return std::nullopt;
  }
  const std::size_t close = text.find('"', 1);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  field.policy = std::string(text.substr(1, close - 1));
  std::size_t pos = close + 1;
  while (pos < text.size()) {
    if (text[pos] != ';') {
      return std::nullopt;
    }
    ++pos;
    while (pos < text.size() && text[pos] == ' ') {
      ++pos;
    }
    const std::size_t eq = text.find('=', pos);
    if (eq == std::string_view::npos || eq == pos) {
      return std::nullopt;
    }
    const std::string key(text.substr(pos, eq - pos));
    std::size_t end = eq + 1;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
      ++end;
    }
    if (end == eq + 1) {
      return std::nullopt;
    }
    field.params[key] = std::stoll(std::string(text.substr(eq + 1, end - eq - 1)));
    pos = end;
  }
  return field;
}

/// The parsed header `name` of `res`; a failed expectation and an empty field if absent or
/// malformed.
inline LimitField limit_header(const Response& res, std::string_view name) {
  const auto it = res.find(name);
  if (it == res.end()) {
    ADD_FAILURE() << "no " << name << " header on a " << res.result_int() << " response";
    return {};
  }
  auto field = parse_limit_field(it->value());
  if (!field) {
    ADD_FAILURE() << name << " is not a \"policy\";key=value... field: " << it->value();
    return {};
  }
  return *field;
}

/// `r` of the RateLimit header (-1 if absent or malformed, with a failed expectation).
inline long long remaining(const Response& res) {
  const LimitField field = limit_header(res, "RateLimit");
  const auto it = field.params.find("r");
  return it == field.params.end() ? -1 : it->second;
}

/// `q` of the RateLimit-Policy header (-1 if absent or malformed, with a failed expectation).
inline long long quota(const Response& res) {
  const LimitField field = limit_header(res, "RateLimit-Policy");
  const auto it = field.params.find("q");
  return it == field.params.end() ? -1 : it->second;
}

/// Whole seconds since `start`, rounded up.
inline long long seconds_since(Clock::time_point start) {
  const auto ms = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  return (ms + 999) / 1000;
}

/// Checks everything docs/behaviour.md "Limits" says about a limited request's reply under policy
/// `name` with effective limit `q` and window `w` seconds; returns its N (Retry-After), 0 if
/// unusable.
inline long long expect_rate_limited(const Response& res, const std::string& name, long long q,
                                     long long w) {
  EXPECT_EQ(res.result_int(), 429) << res.body();
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res.count("X-Backend-Port"), 0U) << "a limited request reached the backend";
  EXPECT_TRUE(res.keep_alive());
  const std::string retry_after(res[http::field::retry_after]);
  long long n = 0;
  try {
    n = std::stoll(retry_after);
  } catch (const std::exception&) {
    ADD_FAILURE() << "Retry-After is not a number of seconds: '" << retry_after << "'";
    return 0;
  }
  EXPECT_EQ(std::to_string(n), retry_after) << "Retry-After must be whole seconds";
  EXPECT_GE(n, 1);
  EXPECT_LE(n, w);
  EXPECT_EQ(res["RateLimit-Policy"],
            "\"" + name + "\";q=" + std::to_string(q) + ";w=" + std::to_string(w));
  EXPECT_EQ(res["RateLimit"], "\"" + name + "\";r=0;t=" + std::to_string(n));
  const json body = json::parse(res.body(), nullptr, false);
  EXPECT_EQ(body, (json{{"error", "rate_limited"}, {"policy", name}, {"retry_after_s", n}}))
      << res.body();
  return n;
}

class LimitsTest : public ::testing::Test, protected ProxyFixtureBase {};

}  // namespace limits_support
}  // namespace sluice::testing
