// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"

namespace sluice::insight {

/// One difference between two config documents (docs/operating.md "Dry runs"). `path` is in the
/// notation `sluice --check` prints (`limits.standard.requests`, `routes[0].limit`); `from` is
/// absent (null) for an add, `to` for a remove.
struct ConfigChange {
  enum class Op : std::uint8_t { kAdd, kRemove, kReplace };
  Op op = Op::kReplace;
  std::string path;
  nlohmann::ordered_json from;
  nlohmann::ordered_json to;

  bool operator==(const ConfigChange&) const = default;
};

[[nodiscard]] std::string_view to_string(ConfigChange::Op op) noexcept;

/// How a raw user key is shown (the access log's `user` label), so an override's key never
/// appears in a change, a summary or an audit line.
using KeyLabel = std::function<std::string(std::string_view key)>;

/// The changes from `before` to `after`, in document order. Objects are compared member by
/// member and arrays element by element (an element past the shorter array is one add or
/// remove); anything else that differs is one replace. The keys under `overrides.POLICY` are
/// shown through `label`, in paths and inside values. Stateless; thread-safe.
[[nodiscard]] std::vector<ConfigChange> config_changes(const nlohmann::ordered_json& before,
                                                       const nlohmann::ordered_json& after,
                                                       const KeyLabel& label);

/// `{"op", "path", "from", "to"}` per change (`from` only for remove and replace, `to` only for
/// add and replace).
[[nodiscard]] nlohmann::json to_json(const std::vector<ConfigChange>& changes);

/// One line for people: the first change (`limits.standard.requests 100 -> 50`,
/// `limits.gold added`, `overrides.p removed`) and `, +N more`; "no change" for none.
[[nodiscard]] std::string summarize(const std::vector<ConfigChange>& changes);

/// The members of a config document that only a restart applies (docs/admin-api.md "Reload"):
/// listen, listeners, admin, threads, access_log, store.
[[nodiscard]] const std::vector<std::string_view>& restart_only_members();

/// The restart-only fields (listeners, admin, threads, access_log, store) whose values differ
/// between `running` and `next`, in that order.
[[nodiscard]] std::vector<std::string> restart_only_changes(const config::Config& running,
                                                            const config::Config& next);

/// `next` with the restart-only members as `running` has them (absent there: removed).
void keep_restart_only(const nlohmann::ordered_json& running, nlohmann::ordered_json& next);

}  // namespace sluice::insight
