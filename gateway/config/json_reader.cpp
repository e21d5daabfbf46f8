// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/json_reader.hpp"

#include <array>
#include <cassert>
#include <charconv>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace sluice::config {
namespace {

// Shortest round-trip text without an exponent: 1 -> "1", 1.5 -> "1.5", 1e6 -> "1000000".
std::string format_number(double value) {
  std::array<char, 64> buffer{};
  const auto [end, ec] =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), value, std::chars_format::fixed);
  if (ec != std::errc{}) {
    return std::to_string(value);
  }
  return {buffer.data(), end};
}

template <typename T>
std::string range_message(T min, T max) {
  if constexpr (std::is_floating_point_v<T>) {
    return "must be between " + format_number(min) + " and " + format_number(max);
  } else {
    return "must be between " + std::to_string(min) + " and " + std::to_string(max);
  }
}

}  // namespace

std::optional<std::int64_t> read_integer(const nlohmann::json& value, const std::string& path,
                                         std::int64_t min, std::int64_t max, Problems& problems) {
  assert(min <= max && max >= 0);
  if (!value.is_number_integer()) {  // a JSON float such as 1.5 or 1e3 is not an integer
    problems.add(path, "must be an integer");
    return std::nullopt;
  }
  if (value.is_number_unsigned()) {
    const auto unsigned_value = value.get<std::uint64_t>();
    if (unsigned_value <= static_cast<std::uint64_t>(max) &&
        static_cast<std::int64_t>(unsigned_value) >= min) {
      return static_cast<std::int64_t>(unsigned_value);
    }
  } else if (const auto signed_value = value.get<std::int64_t>();
             signed_value >= min && signed_value <= max) {
    return signed_value;
  }
  problems.add(path, range_message(min, max));
  return std::nullopt;
}

std::optional<double> read_number(const nlohmann::json& value, const std::string& path, double min,
                                  double max, Problems& problems) {
  if (!value.is_number()) {
    problems.add(path, "must be a number");
    return std::nullopt;
  }
  const auto number = value.get<double>();
  if (number < min || number > max) {
    problems.add(path, range_message(min, max));
    return std::nullopt;
  }
  return number;
}

std::optional<std::string> read_string(const nlohmann::json& value, const std::string& path,
                                       Problems& problems) {
  if (!value.is_string()) {
    problems.add(path, "must be a string");
    return std::nullopt;
  }
  return value.get<std::string>();
}

std::optional<bool> read_boolean(const nlohmann::json& value, const std::string& path,
                                 Problems& problems) {
  if (!value.is_boolean()) {
    problems.add(path, "must be a boolean");
    return std::nullopt;
  }
  return value.get<bool>();
}

ObjectReader::ObjectReader(const nlohmann::json& object, std::string path, Problems& problems)
    : object_(object), path_(std::move(path)), problems_(problems) {
  assert(object_.is_object());
}

// An exception unwinding through a half-read object is the one excuse for skipping finish().
ObjectReader::~ObjectReader() {
  assert((finished_ || std::uncaught_exceptions() > 0) && "ObjectReader::finish() not called");
}

std::string ObjectReader::path_of(std::string_view key) const {
  return member_path(path_, key);
}

bool ObjectReader::has(std::string_view key) const {
  return object_.contains(key);
}

void ObjectReader::report(std::string_view key, std::string message) {
  problems_.add(path_of(key), std::move(message));
}

const nlohmann::json* ObjectReader::take(std::string_view key, Presence presence) {
  consumed_.emplace(key);
  const auto it = object_.find(key);
  if (it == object_.end()) {
    if (presence == Presence::kRequired) {
      report(key, "is required");
    }
    return nullptr;
  }
  return &*it;
}

std::optional<std::int64_t> ObjectReader::integer_value(std::string_view key, std::int64_t min,
                                                        std::int64_t max, Presence presence) {
  const auto* value = take(key, presence);
  return value ? read_integer(*value, path_of(key), min, max, problems_) : std::nullopt;
}

std::optional<std::chrono::milliseconds> ObjectReader::duration_ms(std::string_view key,
                                                                   std::int64_t min_ms,
                                                                   std::int64_t max_ms,
                                                                   Presence presence) {
  const auto value = integer_value(key, min_ms, max_ms, presence);
  return value ? std::optional(std::chrono::milliseconds(*value)) : std::nullopt;
}

std::optional<double> ObjectReader::number(std::string_view key, double min, double max,
                                           Presence presence) {
  const auto* value = take(key, presence);
  return value ? read_number(*value, path_of(key), min, max, problems_) : std::nullopt;
}

std::optional<bool> ObjectReader::boolean(std::string_view key, Presence presence) {
  const auto* value = take(key, presence);
  return value ? read_boolean(*value, path_of(key), problems_) : std::nullopt;
}

std::optional<std::string> ObjectReader::string(std::string_view key, Presence presence) {
  const auto* value = take(key, presence);
  return value ? read_string(*value, path_of(key), problems_) : std::nullopt;
}

std::optional<std::string> ObjectReader::nullable_string(std::string_view key) {
  const auto* value = take(key);
  if (value == nullptr || value->is_null()) {
    return std::nullopt;
  }
  if (!value->is_string()) {
    report(key, "must be a string or null");
    return std::nullopt;
  }
  return value->get<std::string>();
}

const nlohmann::json* ObjectReader::object(std::string_view key, Presence presence) {
  const auto* value = take(key, presence);
  if (value != nullptr && !value->is_object()) {
    report(key, "must be an object");
    return nullptr;
  }
  return value;
}

const nlohmann::json* ObjectReader::array(std::string_view key, Presence presence) {
  const auto* value = take(key, presence);
  if (value != nullptr && !value->is_array()) {
    report(key, "must be an array");
    return nullptr;
  }
  return value;
}

const nlohmann::json* ObjectReader::nullable_array(std::string_view key) {
  const auto* value = take(key);
  if (value == nullptr || value->is_null()) {
    return nullptr;
  }
  if (!value->is_array()) {
    report(key, "must be an array or null");
    return nullptr;
  }
  return value;
}

std::optional<std::size_t> ObjectReader::choice(std::string_view key,
                                                std::span<const std::string_view> names) {
  const auto* value = take(key);
  if (value == nullptr) {
    return std::nullopt;
  }
  if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (text == names[i]) {
        return i;
      }
    }
  }
  std::string message = "must be one of ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    message += i == 0 ? "\"" : ", \"";
    message += names[i];
    message += '"';
  }
  report(key, std::move(message));
  return std::nullopt;
}

void ObjectReader::finish() {
  finished_ = true;
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!consumed_.contains(it.key())) {
      report(it.key(), "unknown field");
    }
  }
}

}  // namespace sluice::config
