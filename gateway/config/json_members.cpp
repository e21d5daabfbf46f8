// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/json_members.hpp"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace sluice::config {

using nlohmann::ordered_json;

MemberIndex::MemberIndex(const ordered_json& object) : object_(object) {
  if (!object.is_object() || object.size() <= kScanUpTo) {
    return;
  }
  index_.reserve(object.size());
  for (const auto& [key, value] : object.items()) {
    index_.emplace(key, &value);  // the first of a repeated key, as ordered_json::find
  }
}

const ordered_json* MemberIndex::find(std::string_view key) const {
  if (!object_.is_object()) {
    return nullptr;
  }
  if (object_.size() > kScanUpTo) {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : it->second;
  }
  for (const auto& [member, value] : object_.items()) {
    if (member == key) {
      return &value;
    }
  }
  return nullptr;
}

namespace {

/// Builds the value as nlohmann's own DOM parser does, but appends each object member without
/// looking for its key first; end_object() then checks the object for a repeated key in one pass
/// (and only then rebuilds it the slow way, last value wins).
///
/// An open object's members wait in a scratch vector of (key, value) pairs, one per depth, reused
/// from object to object, and move into the object once it ends, its size known. Appending to
/// the object itself would grow a vector of pair<const string, json>, whose elements cannot be
/// moved (the key is const): every growth copied each member's whole value, thousands of
/// overrides included.
class LinearSax {
 public:
  using number_integer_t = ordered_json::number_integer_t;
  using number_unsigned_t = ordered_json::number_unsigned_t;
  using number_float_t = ordered_json::number_float_t;
  using string_t = ordered_json::string_t;
  using binary_t = ordered_json::binary_t;

  bool null() { return put(nullptr); }
  bool boolean(bool value) { return put(value); }
  bool number_integer(number_integer_t value) { return put(value); }
  bool number_unsigned(number_unsigned_t value) { return put(value); }
  bool number_float(number_float_t value, const string_t& /*text*/) { return put(value); }
  bool string(string_t& value) { return put(std::move(value)); }
  bool binary(binary_t& value) { return put(ordered_json::binary(std::move(value))); }
  bool start_object(std::size_t /*elements*/) { return open(ordered_json::object()); }
  bool key(string_t& value) {
    key_ = std::move(value);
    return true;
  }
  bool end_object() {
    auto& members = scratch_[open_.size() - 1];
    auto& object = open_.back()->get_ref<ordered_json::object_t&>();
    object.reserve(members.size());
    for (auto& [key, value] : members) {
      object.emplace_back(std::move(key), std::move(value));
    }
    members.clear();
    deduplicate(*open_.back());
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) { return open(ordered_json::array()); }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    failed_ = true;
    return false;
  }

  [[nodiscard]] ordered_json take() && {
    return failed_ ? ordered_json(ordered_json::value_t::discarded) : std::move(root_);
  }

 private:
  using Members = std::vector<std::pair<std::string, ordered_json>>;

  /// Adds `value` where the parser is; the added value's address (stable: a container only
  /// grows again once its open child has ended).
  ordered_json* add(ordered_json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    ordered_json& parent = *open_.back();
    if (parent.is_array()) {
      parent.get_ref<ordered_json::array_t&>().push_back(std::move(value));
      return &parent.back();
    }
    auto& members = scratch_[open_.size() - 1];
    members.emplace_back(std::move(key_), std::move(value));
    return &members.back().second;
  }
  bool put(ordered_json value) {
    add(std::move(value));
    return true;
  }
  bool open(ordered_json empty) {
    open_.push_back(add(std::move(empty)));
    if (scratch_.size() < open_.size()) {
      scratch_.resize(open_.size());
    }
    return true;
  }
  static void deduplicate(ordered_json& object) {
    if (object.size() < 2) {
      return;
    }
    std::unordered_set<std::string_view> seen;
    seen.reserve(object.size());
    bool repeated = false;
    for (const auto& [member, value] : object.items()) {
      repeated = repeated || !seen.insert(member).second;
    }
    if (!repeated) {
      return;
    }
    ordered_json rebuilt = ordered_json::object();
    for (auto& [member, value] : object.get_ref<ordered_json::object_t&>()) {
      rebuilt[member] = std::move(value);
    }
    object = std::move(rebuilt);
  }

  ordered_json root_;
  std::vector<ordered_json*> open_;
  std::vector<Members> scratch_;  ///< an open object's members, by depth (open_'s index)
  std::string key_;
  bool failed_ = false;
};

}  // namespace

ordered_json parse_ordered(std::string_view text) {
  LinearSax sax;
  if (!ordered_json::sax_parse(text.begin(), text.end(), &sax)) {
    return ordered_json(ordered_json::value_t::discarded);
  }
  return std::move(sax).take();
}

}  // namespace sluice::config
