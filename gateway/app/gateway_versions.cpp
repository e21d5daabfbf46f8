// SPDX-License-Identifier: Apache-2.0
// Gateway, config versions (docs/operating.md "Versions and rollback"): the version recorded at
// start and on each reload, and the dry-run checks the admin API asks for. All on the control
// thread, like every other change of the running config.
#include <string>

#include "gateway/app/gateway.hpp"
#include "gateway/insight/config_changes.hpp"
#include "gateway/proxy/steps/identify_step.hpp"

namespace sluice::app {

std::string Gateway::key_label(std::string_view key) const {
  const auto label = proxy::user_label(services_.user_hash, key);
  return std::string(label.data(), label.size());
}

void Gateway::record_version(insight::VersionSource source) {
  // Against the last version, which may come from the history file: a start then shows what
  // was edited while sluice was down.
  const insight::ConfigVersion* last = history_.latest();
  const std::string summary = last == nullptr
                                  ? "initial config"
                                  : insight::summarize(insight::config_changes(
                                        last->config, document_.json(),
                                        [this](std::string_view key) { return key_label(key); }));
  if (fleet_ && source == insight::VersionSource::kReload && fleet_->version() > 0) {
    // A reload in a fleet changes this replica's local part only: made here, on that version.
    history_.next_from_fleet({fleet_->version(), fleet_->replica_id()});
  }
  std::optional<std::string> warning;
  const auto& version = history_.record(source, std::nullopt, summary, document_.json(), warning);
  if (warning) {
    log_->warn("{}", *warning);
  }
  log_->info("config version={} source={} summary={}", version.version, insight::to_string(source),
             version.summary);
}

std::optional<admin::CommitError> Gateway::check_commit(const config::ConfigDocument& next) const {
  if (auto error = backend_tls_.check(next.config(), false)) {
    return admin::CommitError{admin::CommitError::Kind::kPersistFailed, *error};
  }
  if (auto error = auth_.check(next.config())) {
    return admin::CommitError{admin::CommitError::Kind::kPersistFailed, *error};
  }
  return config_->admin.persist ? config_file_.check(document_) : std::nullopt;
}

std::optional<std::string> Gateway::preview_tls(nlohmann::json& would_serve) const {
  if (auto error = backend_tls_.check(*config_, true)) {
    return error;
  }
  return tls_.preview(would_serve);
}

}  // namespace sluice::app
