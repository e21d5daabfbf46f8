// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/problems.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

namespace sluice::config {
namespace {

constexpr std::string_view kRootPath = "(root)";

bool is_plain_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

}  // namespace

std::string to_string(const Problem& problem) {
  return problem.path + ": " + problem.message;
}

std::string member_path(std::string_view parent, std::string_view key) {
  std::string path(parent);
  if (is_plain_key(key)) {
    if (!path.empty()) {
      path += '.';
    }
    path += key;
    return path;
  }
  // Keys come from parsed JSON and are valid UTF-8, but a caller-built document might not be:
  // replace bad bytes rather than throw.
  path += '[';
  path += nlohmann::json(std::string(key))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  path += ']';
  return path;
}

std::string element_path(std::string_view parent, std::size_t index) {
  std::string path(parent);
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

void Problems::add(std::string path, std::string message) {
  if (path.empty()) {
    path = kRootPath;
  }
  list_.push_back(Problem{std::move(path), std::move(message)});
}

}  // namespace sluice::config
