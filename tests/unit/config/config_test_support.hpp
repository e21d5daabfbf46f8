// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/config/config_loader.hpp"

// Helpers shared by the config tests. Stateless; thread-safe.
namespace sluice::config::test_support {

/// A small valid document; tests mutate one field and assert the exact problem lines.
inline nlohmann::json valid_document() {
  return nlohmann::json::parse(R"({
    "limits": {"standard": {"requests": 100, "window_ms": 60000}},
    "backends": {"users": {"endpoints": ["127.0.0.1:9001"]}},
    "routes": [{"name": "users", "prefix": "/api/users", "backend": "users", "limit": "standard"}]
  })");
}

/// The `path: message` lines of a result, as `sluice --check` prints them.
inline std::vector<std::string> problem_lines(const LoadResult& result) {
  std::vector<std::string> lines;
  for (const auto& problem : result.problems) {
    lines.push_back(to_string(problem));
  }
  return lines;
}

/// Problem lines of parse_config(document); also checks the "config iff no problems" contract.
inline std::vector<std::string> problems_of(const nlohmann::json& document) {
  const auto result = parse_config(document);
  if (result.ok() == !result.problems.empty()) {
    return {"BROKEN CONTRACT: config and problems both set or both empty"};
  }
  return problem_lines(result);
}

/// The config parsed from a document the test expects to be valid (a failed expectation
/// otherwise, listing the problems).
inline Config parsed(const nlohmann::json& document) {
  auto result = parse_config(document);
  EXPECT_TRUE(result.ok()) << ::testing::PrintToString(problem_lines(result));
  return result.config.value_or(Config{});
}

}  // namespace sluice::config::test_support
