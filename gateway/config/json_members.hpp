// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

// nlohmann's ordered_json keeps an object's members in a vector, so finding one member is a
// linear scan, and so is every member insert while parsing (it looks for the key first). A
// config with thousands of overrides made each comparison of two versions, and each parse of a
// fleet version, quadratic (docs/fleet.md, "Writes"). These two helpers keep both linear.
namespace sluice::config {

/// Finds members of one JSON object by key in constant time (a hash index for objects past
/// a few members, a plain scan below). References `object`, which must outlive the index and
/// stay unchanged. Not thread-safe: confined to one thread.
class MemberIndex {
 public:
  /// `object` may be any JSON value: a non-object has no members.
  explicit MemberIndex(const nlohmann::ordered_json& object);

  /// The member `key`, or null.
  [[nodiscard]] const nlohmann::ordered_json* find(std::string_view key) const;
  [[nodiscard]] bool contains(std::string_view key) const { return find(key) != nullptr; }

 private:
  static constexpr std::size_t kScanUpTo = 8;

  const nlohmann::ordered_json& object_;
  std::unordered_map<std::string_view, const nlohmann::ordered_json*> index_;
};

/// Parses JSON text in time linear in its size, members in the text's order, as
/// ordered_json::parse does (a key given twice: the last value, in the first one's place).
/// Invalid text: a discarded value (`is_discarded()`), never an exception.
[[nodiscard]] nlohmann::ordered_json parse_ordered(std::string_view text);

}  // namespace sluice::config
