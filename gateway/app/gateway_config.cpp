// SPDX-License-Identifier: Apache-2.0
// Gateway, part 2: config versions. SIGHUP reloads, the admin API's commits and the TLS reload
// all end in install(), on the control thread (docs/architecture.md "Config versions").
#include <string>

#include "gateway/app/gateway.hpp"
#include "gateway/log/logging.hpp"

namespace sluice::app {

proxy::Bindings Gateway::bind(const config::Config& config) {
  proxy::Bindings bindings = sync_.apply(config);
  bindings.backend_tls = backend_tls_.current();
  return bindings;
}

std::optional<std::string> Gateway::reload_tls() {
  if (auto error = backend_tls_.load(*config_, true)) {
    log::get("tls")->error("tls reload failed (the files read before stay) problem={}", *error);
    return error;
  }
  install(document_);  // the same config, bound to the files just read
  return tls_.any() ? tls_.reload() : std::nullopt;
}

std::optional<admin::CommitError> Gateway::commit(config::ConfigDocument next,
                                                  const admin::CommitOptions& options) {
  if (auto error = backend_tls_.load(next.config(), false)) {
    return admin::CommitError{admin::CommitError::Kind::kPersistFailed, *error};
  }
  if (auto error = auth_.load(next.config(), false)) {
    return admin::CommitError{admin::CommitError::Kind::kPersistFailed, *error};
  }
  if (fleet_) {
    return commit_to_fleet(std::move(next), options);
  }
  if (config_->admin.persist) {
    std::optional<std::string> warning;
    if (auto error = config_file_.write(document_, next, warning)) {
      return error;
    }
    if (warning) {
      log_->warn("config written but may not survive a crash: {}", *warning);
    }
    config_watch_.mark_current();  // our own write: nothing for the watch to reload
  }
  install(std::move(next));
  return std::nullopt;
}

void Gateway::reload() {
  notifier_.reloading(clock_.now());
  std::string config_problem;
  const bool config_ok = reload_config(config_problem);  // with the backends' TLS files
  publish_reload(config_ok ? std::nullopt : std::optional(config_problem));
  // Independent files: tried either way.
  const auto tls_error = tls_.any() ? tls_.reload() : std::nullopt;
  const bool tls_ok = !tls_error;
  if (tls_.any()) {
    publish_outcome("cert_reload", tls_error);
  }
  metrics_.count_reload(config_ok && tls_ok);
  // Serving either way: a failed reload keeps what ran before (the log says why).
  notifier_.ready(config_ok && tls_ok ? "serving" : "serving; the last reload failed");
}

bool Gateway::reload_config(std::string& problem) {
  auto config_log = log::get("config");
  auto result = config_file_.load();
  if (!result.ok()) {
    config_log->error("reload failed file={} problems={}", config_file_.path().string(),
                      result.problems.size());
    for (const auto& p : result.problems) {
      config_log->error("reload problem {}", config::to_string(p));
    }
    problem = result.problems.empty() ? "cannot read " + config_file_.path().string()
                                      : config::to_string(result.problems.front());
    if (result.problems.size() > 1) {
      problem += " (and " + std::to_string(result.problems.size() - 1) + " more)";
    }
    return false;
  }
  if (fleet_ && fleet_->version() > 0 &&
      !keep_fleet_part(*result.document, problem)) {  // the fleet's sections are the fleet's
    return false;
  }
  const config::Config& next = result.document->config();
  const auto restart_only = [&](std::string_view field, bool changed) {
    if (changed) {
      config_log->warn("reload ignores field={} (needs a restart)", field);
    }
  };
  restart_only("listeners", next.listeners != listeners_);
  restart_only("admin", !(next.admin == config_->admin));
  restart_only("threads", next.threads != config_->threads);
  restart_only("access_log", !(next.access_log == config_->access_log));
  restart_only("store", !(next.store == config_->store));
  restart_only("fleet", !(next.fleet == config_->fleet));
  if (auto error = backend_tls_.load(next, true)) {
    config_log->error("reload failed problem={}", *error);
    problem = *error;
    return false;
  }
  if (auto error = auth_.load(next, true)) {
    config_log->error("reload failed problem={}", *error);
    problem = *error;
    return false;
  }
  gate_.set_max(next.http.max_connections);
  install(std::move(*result.document));
  record_version(insight::VersionSource::kReload);
  config_log->info("reload ok routes={} backends={}", config_->routes.size(),
                   config_->backends.size());
  return true;
}

void Gateway::install(config::ConfigDocument document) {
  const std::shared_ptr<const config::Config>& next = document.shared_config();
  const std::shared_ptr<const proxy::Snapshot> old = snapshots_.load();
  snapshots_.store(std::make_shared<const proxy::Snapshot>(next, bind(*next)));
  // Requests still on the old snapshot may use a removed policy (the store admits them) or a
  // removed breaker (the snapshot keeps it alive); metric series go once it is gone.
  sync_.retire(*config_, next, *old);
  config_ = next;
  document_ = std::move(document);
  watch_config_file();
  if (jwks_) {
    static_cast<void>(jwks_->follow(config_->auth.jwt));  // a CA it cannot load is logged
  }
}

void Gateway::watch_config_file() {
  if (!config_->config_watch) {
    config_watch_.stop();
  } else if (!config_watch_.watching()) {
    if (auto error = config_watch_.start()) {
      log::get("config")->error("config_watch is on but cannot watch file={} error={}",
                                config_file_.path().string(), *error);
    }
  }
}

}  // namespace sluice::app
