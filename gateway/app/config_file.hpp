// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "gateway/admin/admin_api.hpp"
#include "gateway/config/config_document.hpp"

namespace sluice::app {

/// The config file the gateway runs from: read at start and on SIGHUP, written back when an
/// admin change is persisted (admin.persist). Writing never overwrites an edit made to the file
/// by hand since sluice last read or wrote it: the operator reloads first. Blocking file I/O:
/// used on the main (admin and signal) thread only, never on a data-path thread. Not
/// thread-safe.
class ConfigFile {
 public:
  explicit ConfigFile(std::filesystem::path path) : path_(std::move(path)) {}

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] config::LoadedDocument load() const {
    return config::ConfigDocument::from_file(path_);
  }
  /// Replaces the file's contents, which must still be `current` (as a JSON document), with
  /// `next`, atomically. On an error the file is unchanged. `warning` receives a note when the
  /// write may not survive a machine crash (the directory could not be synced).
  [[nodiscard]] std::optional<admin::CommitError> write(const config::ConfigDocument& current,
                                                        const config::ConfigDocument& next,
                                                        std::optional<std::string>& warning) const;
  /// What write() would refuse before writing: the file is no longer `current` (409).
  [[nodiscard]] std::optional<admin::CommitError> check(
      const config::ConfigDocument& current) const;

 private:
  std::filesystem::path path_;
};

}  // namespace sluice::app
