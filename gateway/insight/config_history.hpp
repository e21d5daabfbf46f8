// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::insight {

/// What made a config version (docs/operating.md "Versions and rollback").
/// kFleet: another replica's change, applied here (docs/fleet.md).
enum class VersionSource : std::uint8_t { kStart, kReload, kAdmin, kRollback, kFleet };
[[nodiscard]] std::string_view to_string(VersionSource source) noexcept;
[[nodiscard]] std::optional<VersionSource> version_source_from(std::string_view text) noexcept;

/// Where a version came from in a fleet (docs/fleet.md, "Versions, rollback and audit"): the
/// fleet version it is and the replica whose admin API made it.
struct FleetOrigin {
  std::uint64_t version = 0;
  std::string replica;

  bool operator==(const FleetOrigin&) const = default;
};

/// One config version: the whole config document that ran from then on, and who made it.
struct ConfigVersion {
  std::uint64_t version = 0;
  std::string ts;  ///< UTC, ISO 8601 with milliseconds: "2026-11-26T12:00:00.123Z"
  VersionSource source = VersionSource::kStart;
  /// The admin token's short hash (admin::BearerAuth::actor()), "open", or nullopt (start,
  /// reload: no admin call made it).
  std::optional<std::string> actor;
  std::string summary;  ///< config_changes.hpp summarize() of the change from the version before
  nlohmann::ordered_json config;
  std::optional<FleetOrigin> fleet;  ///< in a fleet: the fleet version this is

  bool operator==(const ConfigVersion&) const = default;
};

/// {"version", "ts", "source", "actor", "summary"}, in a fleet "fleet_version" and "replica",
/// and, `with_config`, "config".
[[nodiscard]] nlohmann::ordered_json to_json(const ConfigVersion& version, bool with_config);
/// The version `to_json(v, true)` wrote; nullopt when a field is missing or of the wrong type.
[[nodiscard]] std::optional<ConfigVersion> version_from_json(const nlohmann::ordered_json& json);

/// The last kCapacity config versions, numbered from 1 up (docs/decisions/0017-config-versions.md).
/// With a file, every record() rewrites it atomically (core::write_file_atomically) and load()
/// continues its numbering, so the history survives restarts. Blocking file I/O: the gateway
/// uses it on its control thread only, never a data-path thread. Not thread-safe: confined to
/// one thread. Holds the wall clock function, which must stay callable for its lifetime.
class ConfigHistory {
 public:
  static constexpr std::size_t kCapacity = 50;
  using WallClock = std::function<std::chrono::system_clock::time_point()>;

  /// `file` nullopt: kept in memory only.
  ConfigHistory(WallClock wall_clock, std::optional<std::filesystem::path> file);

  /// Reads the file (nothing without one). A missing file is an empty history. An unreadable
  /// or corrupt file is renamed to FILE.corrupt and the history starts empty: the returned
  /// warning says so. Never throws for the file's contents.
  std::optional<std::string> load();

  /// Appends a version numbered one past the newest (1 for the first), drops the oldest beyond
  /// kCapacity, and writes the file. `warning` is set when the file could not be written (the
  /// version is kept in memory all the same) or may not survive a machine crash.
  const ConfigVersion& record(VersionSource source, std::optional<std::string> actor,
                              std::string summary, nlohmann::ordered_json config,
                              std::optional<std::string>& warning);

  /// The next record() is fleet version `origin` (set just before it by whoever installed
  /// that version: the fleet's write or its apply).
  void next_from_fleet(FleetOrigin origin) { next_origin_ = std::move(origin); }

  /// Oldest first.
  [[nodiscard]] const std::deque<ConfigVersion>& versions() const noexcept { return versions_; }
  /// Version `number`, or null when it is not (or no longer) kept.
  [[nodiscard]] const ConfigVersion* find(std::uint64_t number) const noexcept;
  /// The newest version, or null before the first.
  [[nodiscard]] const ConfigVersion* latest() const noexcept {
    return versions_.empty() ? nullptr : &versions_.back();
  }
  [[nodiscard]] const std::optional<std::filesystem::path>& file() const noexcept { return file_; }

  /// The file kept beside a config file: `<config>.history.json`.
  [[nodiscard]] static std::filesystem::path file_beside(const std::filesystem::path& config);

 private:
  [[nodiscard]] std::optional<std::string> write() const;

  WallClock wall_clock_;
  std::optional<std::filesystem::path> file_;
  std::deque<ConfigVersion> versions_;
  std::optional<FleetOrigin> next_origin_;
};

}  // namespace sluice::insight
