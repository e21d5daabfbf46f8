// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "gateway/config/problems.hpp"

namespace sluice::config {

enum class Presence { kOptional, kRequired };

// Checks of one JSON value found at `path`. Each returns the value, or std::nullopt after adding
// exactly one problem ("must be an integer", "must be between 1 and 10", ...).
std::optional<std::int64_t> read_integer(const nlohmann::json& value, const std::string& path,
                                         std::int64_t min, std::int64_t max, Problems& problems);
std::optional<double> read_number(const nlohmann::json& value, const std::string& path, double min,
                                  double max, Problems& problems);
std::optional<std::string> read_string(const nlohmann::json& value, const std::string& path,
                                       Problems& problems);
std::optional<bool> read_boolean(const nlohmann::json& value, const std::string& path,
                                 Problems& problems);

/// Reads the members of one JSON object located at `path`, reporting problems with the member's
/// path. Every getter marks its key as consumed; when absent it returns std::nullopt (or nullptr),
/// reporting "is required" for Presence::kRequired; when the value is bad it reports that and
/// returns std::nullopt too (use has() to tell the cases apart). finish() reports each member
/// no getter consumed as "unknown field" and must be called once before destruction.
/// Not thread-safe: confined to one load. References `object` and `problems`, which must
/// outlive the reader.
class ObjectReader {
 public:
  /// Precondition: object.is_object().
  ObjectReader(const nlohmann::json& object, std::string path, Problems& problems);
  ~ObjectReader();
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] Problems& problems() const noexcept { return problems_; }
  [[nodiscard]] std::string path_of(std::string_view key) const;
  [[nodiscard]] bool has(std::string_view key) const;

  /// Adds a problem at the member `key` (present or not).
  void report(std::string_view key, std::string message);
  /// The raw value of `key` (consumed), or nullptr when absent.
  const nlohmann::json* take(std::string_view key, Presence presence = Presence::kOptional);

  template <std::integral T>
  std::optional<T> integer(std::string_view key, T min, T max,
                           Presence presence = Presence::kOptional) {
    const auto value = integer_value(key, static_cast<std::int64_t>(min),
                                     static_cast<std::int64_t>(max), presence);
    return value ? std::optional<T>(static_cast<T>(*value)) : std::nullopt;
  }
  /// An integer number of milliseconds in [min_ms, max_ms].
  std::optional<std::chrono::milliseconds> duration_ms(std::string_view key, std::int64_t min_ms,
                                                       std::int64_t max_ms,
                                                       Presence presence = Presence::kOptional);
  std::optional<double> number(std::string_view key, double min, double max,
                               Presence presence = Presence::kOptional);
  std::optional<bool> boolean(std::string_view key, Presence presence = Presence::kOptional);
  std::optional<std::string> string(std::string_view key, Presence presence = Presence::kOptional);
  /// A string; null and absent both give std::nullopt. Otherwise "must be a string or null".
  std::optional<std::string> nullable_string(std::string_view key);
  /// The value if it is an object, else nullptr ("must be an object" when present).
  const nlohmann::json* object(std::string_view key, Presence presence = Presence::kOptional);
  /// The value if it is an array, else nullptr ("must be an array" when present).
  const nlohmann::json* array(std::string_view key, Presence presence = Presence::kOptional);
  /// The value if it is an array; null and absent both give nullptr.
  const nlohmann::json* nullable_array(std::string_view key);

  /// One of `values`, spelled as to_string(value) in JSON; anything else (including a non-string)
  /// gets `must be one of "a", "b"`.
  template <typename E, std::size_t N>
  std::optional<E> enumeration(std::string_view key, const std::array<E, N>& values) {
    std::array<std::string_view, N> names{};
    for (std::size_t i = 0; i < N; ++i) {
      names[i] = to_string(values[i]);
    }
    const auto index = choice(key, names);
    return index ? std::optional<E>(values[*index]) : std::nullopt;
  }

  /// If member `key` is an object, calls fn(ObjectReader&) on a reader for it, then finish()es
  /// that reader. Returns whether fn ran.
  template <typename Fn>
  bool nested(std::string_view key, Fn&& fn, Presence presence = Presence::kOptional) {
    const auto* value = object(key, presence);
    if (value == nullptr) {
      return false;
    }
    ObjectReader reader(*value, path_of(key), problems_);
    std::forward<Fn>(fn)(reader);
    reader.finish();
    return true;
  }

  /// Reports every member that no getter consumed as "unknown field".
  void finish();

 private:
  std::optional<std::int64_t> integer_value(std::string_view key, std::int64_t min,
                                            std::int64_t max, Presence presence);
  std::optional<std::size_t> choice(std::string_view key, std::span<const std::string_view> names);

  const nlohmann::json& object_;
  std::string path_;
  Problems& problems_;
  std::set<std::string, std::less<>> consumed_;
  [[maybe_unused]] bool finished_ = false;  // checked by an assert in the destructor
};

}  // namespace sluice::config
