// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/config_changes.hpp"

#include <algorithm>
#include <utility>

#include "gateway/config/json_members.hpp"
#include "gateway/config/problems.hpp"

namespace sluice::insight {
namespace {

using nlohmann::ordered_json;
using Op = ConfigChange::Op;

constexpr std::size_t kChangesMaxShownValue = 60;  // characters of a value in a summary

// Where a value sits, as far as override keys are concerned: `overrides` (its members are
// policies), `overrides.P` (its members are raw user keys), or anywhere else.
enum class ChangesDepth : std::uint8_t { kRoot, kOverrides, kOverrideKeys, kOther };

ChangesDepth changes_child_depth(ChangesDepth depth, std::string_view key) {
  switch (depth) {
    case ChangesDepth::kRoot:
      return key == "overrides" ? ChangesDepth::kOverrides : ChangesDepth::kOther;
    case ChangesDepth::kOverrides:
      return ChangesDepth::kOverrideKeys;
    default:
      return ChangesDepth::kOther;
  }
}

// `value` with every raw user key below it replaced by its label.
ordered_json changes_relabel(const ordered_json& value, ChangesDepth depth, const KeyLabel& label) {
  if (!value.is_object() || depth == ChangesDepth::kOther) {
    return value;
  }
  ordered_json out = ordered_json::object();
  for (const auto& [key, member] : value.items()) {
    const std::string shown = depth == ChangesDepth::kOverrideKeys ? label(key) : key;
    out[shown] = changes_relabel(member, changes_child_depth(depth, key), label);
  }
  return out;
}

class ChangesWalker {
 public:
  explicit ChangesWalker(const KeyLabel& label) : label_(label) {}

  void walk(const ordered_json& before, const ordered_json& after, const std::string& path,
            ChangesDepth depth) {
    if (before == after) {
      return;
    }
    walk_different(before, after, path, depth);
  }

  std::vector<ConfigChange> release() && { return std::move(out_); }

 private:
  /// walk() of two values already known to differ.
  void walk_different(const ordered_json& before, const ordered_json& after,
                      const std::string& path, ChangesDepth depth) {
    if (before.is_object() && after.is_object()) {
      walk_objects(before, after, path, depth);
      return;
    }
    if (before.is_array() && after.is_array()) {
      walk_arrays(before, after, path);
      return;
    }
    out_.push_back({Op::kReplace, path, changes_relabel(before, depth, label_),
                    changes_relabel(after, depth, label_)});
  }

  std::string member(const std::string& path, const std::string& key, ChangesDepth depth) const {
    return config::member_path(path, depth == ChangesDepth::kOverrideKeys ? label_(key) : key);
  }

  void walk_objects(const ordered_json& before, const ordered_json& after, const std::string& path,
                    ChangesDepth depth) {
    // A member's path (and an override key's label) is made only for a member that changed:
    // an overrides object may hold thousands of keys, and one admin change alters one.
    const auto& before_members = before.get_ref<const ordered_json::object_t&>();
    const auto& after_members = after.get_ref<const ordered_json::object_t&>();
    if (before_members.size() <= after_members.size() &&
        std::equal(before_members.begin(), before_members.end(), after_members.begin(),
                   [](const auto& a, const auto& b) { return a.first == b.first; })) {
      // The members kept their places (one replaced, some added at the end, as most changes
      // are): compared pair by pair, with no index.
      auto other = after_members.begin();
      for (const auto& [key, value] : before_members) {
        if (!(value == other->second)) {
          walk_different(value, other->second, member(path, key, depth),
                         changes_child_depth(depth, key));
        }
        ++other;
      }
      for (; other != after_members.end(); ++other) {
        const auto& [key, value] = *other;
        out_.push_back({Op::kAdd, member(path, key, depth), nullptr,
                        changes_relabel(value, changes_child_depth(depth, key), label_)});
      }
      return;
    }
    walk_indexed(before, after, path, depth);
  }

  void walk_indexed(const ordered_json& before, const ordered_json& after, const std::string& path,
                    ChangesDepth depth) {
    // Indexed: an overrides object may hold thousands of keys (config/json_members.hpp).
    const config::MemberIndex before_members(before);
    const config::MemberIndex after_members(after);
    for (const auto& [key, value] : before.items()) {
      const ChangesDepth child = changes_child_depth(depth, key);
      if (const auto* other = after_members.find(key); other == nullptr) {
        out_.push_back({Op::kRemove, member(path, key, depth),
                        changes_relabel(value, child, label_), nullptr});
      } else if (!(value == *other)) {
        walk_different(value, *other, member(path, key, depth), child);
      }
    }
    for (const auto& [key, value] : after.items()) {
      if (!before_members.contains(key)) {
        out_.push_back({Op::kAdd, member(path, key, depth), nullptr,
                        changes_relabel(value, changes_child_depth(depth, key), label_)});
      }
    }
  }

  void walk_arrays(const ordered_json& before, const ordered_json& after, const std::string& path) {
    const std::size_t common = std::min(before.size(), after.size());
    for (std::size_t i = 0; i < common; ++i) {
      walk(before[i], after[i], config::element_path(path, i), ChangesDepth::kOther);
    }
    for (std::size_t i = common; i < before.size(); ++i) {
      out_.push_back({Op::kRemove, config::element_path(path, i), before[i], nullptr});
    }
    for (std::size_t i = common; i < after.size(); ++i) {
      out_.push_back({Op::kAdd, config::element_path(path, i), nullptr, after[i]});
    }
  }

  const KeyLabel& label_;
  std::vector<ConfigChange> out_;
};

std::string changes_shown(const ordered_json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (text.size() > kChangesMaxShownValue) {
    text.resize(kChangesMaxShownValue);
    text += "...";
  }
  return text;
}

}  // namespace

std::string_view to_string(ConfigChange::Op op) noexcept {
  switch (op) {
    case Op::kAdd:
      return "add";
    case Op::kRemove:
      return "remove";
    case Op::kReplace:
      break;
  }
  return "replace";
}

std::vector<ConfigChange> config_changes(const ordered_json& before, const ordered_json& after,
                                         const KeyLabel& label) {
  ChangesWalker walker(label);
  walker.walk(before, after, "", ChangesDepth::kRoot);
  return std::move(walker).release();
}

nlohmann::json to_json(const std::vector<ConfigChange>& changes) {
  nlohmann::json out = nlohmann::json::array();
  for (const ConfigChange& change : changes) {
    nlohmann::json item = {{"op", to_string(change.op)},
                           {"path", change.path.empty() ? "(root)" : change.path}};
    if (change.op != Op::kAdd) {
      item["from"] = nlohmann::json(change.from);
    }
    if (change.op != Op::kRemove) {
      item["to"] = nlohmann::json(change.to);
    }
    out.push_back(std::move(item));
  }
  return out;
}

std::string summarize(const std::vector<ConfigChange>& changes) {
  if (changes.empty()) {
    return "no change";
  }
  const ConfigChange& first = changes.front();
  std::string line = first.path.empty() ? "(root)" : first.path;
  switch (first.op) {
    case Op::kAdd:
      line += first.to.is_structured() ? " added" : " = " + changes_shown(first.to) + " (added)";
      break;
    case Op::kRemove:
      line += " removed";
      break;
    case Op::kReplace:
      line += " " + changes_shown(first.from) + " -> " + changes_shown(first.to);
      break;
  }
  if (changes.size() > 1) {
    line += ", +" + std::to_string(changes.size() - 1) + " more";
  }
  return line;
}

const std::vector<std::string_view>& restart_only_members() {
  static const std::vector<std::string_view> members{"listen",  "listeners",  "admin",
                                                     "threads", "access_log", "store"};
  return members;
}

std::vector<std::string> restart_only_changes(const config::Config& running,
                                              const config::Config& next) {
  std::vector<std::string> fields;
  const auto note = [&](std::string name, bool changed) {
    if (changed) {
      fields.push_back(std::move(name));
    }
  };
  note("listeners", next.listeners != running.listeners);
  note("admin", !(next.admin == running.admin));
  note("threads", next.threads != running.threads);
  note("access_log", !(next.access_log == running.access_log));
  note("store", !(next.store == running.store));
  return fields;
}

void keep_restart_only(const ordered_json& running, ordered_json& next) {
  for (const std::string_view name : restart_only_members()) {
    const std::string key(name);
    if (const auto it = running.find(key); it != running.end()) {
      next[key] = *it;
    } else if (next.is_object()) {
      next.erase(key);
    }
  }
}

}  // namespace sluice::insight
