// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/config_file.hpp"

#include "gateway/config/config_loader.hpp"
#include "gateway/core/atomic_file.hpp"

namespace sluice::app {

std::optional<admin::CommitError> ConfigFile::write(const config::ConfigDocument& current,
                                                    const config::ConfigDocument& next,
                                                    std::optional<std::string>& warning) const {
  if (auto conflict = check(current)) {
    return conflict;
  }
  auto written = core::write_file_atomically(path_, next.text());
  if (written.error) {
    return admin::CommitError{.kind = admin::CommitError::Kind::kPersistFailed,
                              .detail = std::move(*written.error)};
  }
  warning = std::move(written.warning);
  return std::nullopt;
}

std::optional<admin::CommitError> ConfigFile::check(const config::ConfigDocument& current) const {
  // Compared as JSON, so formatting alone (ours or the operator's) is not an edit.
  std::string text;
  const auto unreadable = config::read_config_file(path_, text);
  const auto on_disk = unreadable ? config::JsonText{} : config::parse_json_text(text);
  if (!on_disk.json || *on_disk.json != current.json()) {
    return admin::CommitError{.kind = admin::CommitError::Kind::kFileChanged,
                              .detail = path_.string() +
                                        " changed on disk since sluice last read or wrote it; "
                                        "reload it (SIGHUP) and retry"};
  }
  return std::nullopt;
}

}  // namespace sluice::app
