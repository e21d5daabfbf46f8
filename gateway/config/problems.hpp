// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::config {

/// One thing wrong with a configuration document, located by a JSON path such as
/// `routes[0].backend` or `limits.standard.buckets`. `path` is "(root)" for the document itself.
struct Problem {
  std::string path;
  std::string message;

  bool operator==(const Problem&) const = default;
};

/// "path: message", the line `sluice --check` prints.
std::string to_string(const Problem& problem);

/// The path of member `key` of the object at `parent` ("" is the document root). Keys made only
/// of [A-Za-z0-9_-] join with a dot (`limits.standard`); any other key, including "", renders as
/// a JSON string in brackets (`overrides.standard["a.b"]`).
std::string member_path(std::string_view parent, std::string_view key);

/// The path of element `index` of the array at `parent`: `routes[3]`.
std::string element_path(std::string_view parent, std::size_t index);

/// Collects problems in the order they are found; a path of "" is recorded as "(root)".
/// Not thread-safe: confined to one load.
class Problems {
 public:
  void add(std::string path, std::string message);

  [[nodiscard]] bool empty() const noexcept { return list_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return list_.size(); }
  [[nodiscard]] const std::vector<Problem>& list() const noexcept { return list_; }
  [[nodiscard]] std::vector<Problem> release() && { return std::move(list_); }

 private:
  std::vector<Problem> list_;
};

}  // namespace sluice::config
