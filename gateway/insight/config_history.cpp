// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/config_history.hpp"

#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "gateway/core/atomic_file.hpp"
#include "gateway/insight/utc_timestamp.hpp"

namespace sluice::insight {
namespace {

using nlohmann::ordered_json;

constexpr int kHistoryFormat = 1;  // the file's "format": bumped when its shape changes

// The file's versions, oldest first, or why they cannot be used.
std::optional<std::deque<ConfigVersion>> history_parse(const std::string& text,
                                                       std::string& problem) {
  const ordered_json doc = ordered_json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    problem = "not valid JSON";
    return std::nullopt;
  }
  const auto list = doc.is_object() ? doc.find("versions") : doc.end();
  if (!doc.is_object() || doc.value("format", 0) != kHistoryFormat || list == doc.end() ||
      !list->is_array()) {
    problem = "not a version history (format " + std::to_string(kHistoryFormat) + ")";
    return std::nullopt;
  }
  std::deque<ConfigVersion> versions;
  for (const auto& item : *list) {
    auto version = version_from_json(item);
    if (!version || (!versions.empty() && version->version <= versions.back().version)) {
      problem = "version " + std::to_string(versions.size()) + " is malformed or out of order";
      return std::nullopt;
    }
    versions.push_back(std::move(*version));
  }
  return versions;
}

}  // namespace

std::string_view to_string(VersionSource source) noexcept {
  switch (source) {
    case VersionSource::kStart:
      return "start";
    case VersionSource::kReload:
      return "reload";
    case VersionSource::kAdmin:
      return "admin";
    case VersionSource::kFleet:
      return "fleet";
    case VersionSource::kRollback:
      break;
  }
  return "rollback";
}

std::optional<VersionSource> version_source_from(std::string_view text) noexcept {
  for (const auto source : {VersionSource::kStart, VersionSource::kReload, VersionSource::kAdmin,
                            VersionSource::kRollback, VersionSource::kFleet}) {
    if (to_string(source) == text) {
      return source;
    }
  }
  return std::nullopt;
}

ordered_json to_json(const ConfigVersion& version, bool with_config) {
  ordered_json out = {{"version", version.version},
                      {"ts", version.ts},
                      {"source", to_string(version.source)},
                      {"actor", version.actor ? ordered_json(*version.actor) : ordered_json()},
                      {"summary", version.summary}};
  if (version.fleet) {
    out["fleet_version"] = version.fleet->version;
    out["replica"] = version.fleet->replica;
  }
  if (with_config) {
    out["config"] = version.config;
  }
  return out;
}

std::optional<ConfigVersion> version_from_json(const ordered_json& json) {
  if (!json.is_object()) {
    return std::nullopt;
  }
  const auto number = json.find("version");
  const auto ts = json.find("ts");
  const auto source = json.find("source");
  const auto actor = json.find("actor");
  const auto summary = json.find("summary");
  const auto config = json.find("config");
  if (number == json.end() || !number->is_number_unsigned() || ts == json.end() ||
      !ts->is_string() || source == json.end() || !source->is_string() || actor == json.end() ||
      !(actor->is_string() || actor->is_null()) || summary == json.end() || !summary->is_string() ||
      config == json.end() || !config->is_object()) {
    return std::nullopt;
  }
  const auto kind = version_source_from(source->get<std::string>());
  if (!kind || number->get<std::uint64_t>() == 0) {
    return std::nullopt;
  }
  ConfigVersion version;
  version.version = number->get<std::uint64_t>();
  version.ts = ts->get<std::string>();
  version.source = *kind;
  if (actor->is_string()) {
    version.actor = actor->get<std::string>();
  }
  version.summary = summary->get<std::string>();
  version.config = *config;
  const auto fleet_version = json.find("fleet_version");
  const auto replica = json.find("replica");
  if (fleet_version != json.end() && fleet_version->is_number_unsigned() && replica != json.end() &&
      replica->is_string()) {
    version.fleet = FleetOrigin{fleet_version->get<std::uint64_t>(), replica->get<std::string>()};
  }
  return version;
}

ConfigHistory::ConfigHistory(WallClock wall_clock, std::optional<std::filesystem::path> file)
    : wall_clock_(std::move(wall_clock)), file_(std::move(file)) {}

std::filesystem::path ConfigHistory::file_beside(const std::filesystem::path& config) {
  std::filesystem::path file = config;
  file += ".history.json";
  return file;
}

std::optional<std::string> ConfigHistory::load() {
  versions_.clear();
  if (!file_) {
    return std::nullopt;
  }
  std::error_code ec;
  if (!std::filesystem::exists(*file_, ec) && !ec) {
    return std::nullopt;  // the first start with persist on
  }
  std::string problem;
  std::optional<std::deque<ConfigVersion>> loaded;
  std::ifstream in(*file_, std::ios::binary);
  if (!in.is_open()) {
    problem = "cannot be opened";
  } else {
    std::stringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      problem = "cannot be read";
    } else {
      loaded = history_parse(text.str(), problem);
    }
  }
  if (loaded) {
    versions_ = std::move(*loaded);
    while (versions_.size() > kCapacity) {
      versions_.pop_front();
    }
    return std::nullopt;
  }
  // Never fatal: the gateway starts with a fresh history, and the old file is kept for a look.
  std::filesystem::path aside = *file_;
  aside += ".corrupt";
  std::filesystem::rename(*file_, aside, ec);
  return "config history " + file_->string() + " " + problem + "; " +
         (ec ? "could not move it aside (" + ec.message() + "), it will be overwritten"
             : "moved to " + aside.string()) +
         "; the history starts afresh";
}

const ConfigVersion& ConfigHistory::record(VersionSource source, std::optional<std::string> actor,
                                           std::string summary, ordered_json config,
                                           std::optional<std::string>& warning) {
  ConfigVersion next;
  next.version = versions_.empty() ? 1 : versions_.back().version + 1;
  next.ts = utc_timestamp(wall_clock_());
  next.source = source;
  next.actor = std::move(actor);
  next.summary = std::move(summary);
  next.config = std::move(config);
  next.fleet = std::exchange(next_origin_, std::nullopt);
  versions_.push_back(std::move(next));
  while (versions_.size() > kCapacity) {
    versions_.pop_front();
  }
  warning = write();
  return versions_.back();
}

const ConfigVersion* ConfigHistory::find(std::uint64_t number) const noexcept {
  if (versions_.empty() || number < versions_.front().version ||
      number > versions_.back().version) {
    return nullptr;
  }
  for (const ConfigVersion& version : versions_) {  // at most kCapacity
    if (version.version == number) {
      return &version;
    }
  }
  return nullptr;
}

std::optional<std::string> ConfigHistory::write() const {
  if (!file_) {
    return std::nullopt;
  }
  ordered_json list = ordered_json::array();
  for (const ConfigVersion& version : versions_) {
    list.push_back(to_json(version, true));
  }
  const ordered_json doc = {{"format", kHistoryFormat}, {"versions", std::move(list)}};
  auto written = core::write_file_atomically(
      *file_, doc.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n");
  if (written.error) {
    return "config history not written: " + *written.error;
  }
  return written.warning;
}

}  // namespace sluice::insight
