// SPDX-License-Identifier: Apache-2.0
// Gateway, the fleet's part (docs/fleet.md): joining at start, other replicas' versions
// applied on the control thread, admin changes written to the fleet first.
#include <boost/asio/post.hpp>
#include <utility>

#include "gateway/app/gateway.hpp"
#include "gateway/app/listen_socket.hpp"
#include "gateway/config/json_members.hpp"
#include "gateway/insight/fleet_top.hpp"
#include "gateway/log/logging.hpp"
#include "gateway/log/user_hash.hpp"

namespace sluice::app {

void Gateway::make_fleet() {
  if (!config_->fleet.enabled) {
    return;
  }
  fleet_ = std::make_unique<FleetLink>(
      *config_, metrics_,
      [this] {
        boost::asio::post(control_, [this] {
          auto delivered = fleet_->take_deliveries();
          if (delivered.version) {
            apply_fleet(std::move(delivered.version->version), delivered.version->authoritative);
          }
          publish_fleet_events(std::move(delivered.events));
          if (delivered.drained) {
            apply_fleet_draining(*delivered.drained);
          }
        });
      },
      log::get("fleet"));
  events_.observe([this](std::string_view type, const std::string& body) {
    fleet_->publish_event(std::string(type), body);
  });
}

void Gateway::apply_fleet_draining(const fleet::DrainedEndpoints& drained) {
  const core::TimePoint now = clock_.now();
  for (const auto& [name, backend] : config_->backends) {
    const auto health = health_.find(name);
    if (!health) {
      continue;
    }
    for (const auto& endpoint : health->view(now)) {
      const bool draining = drained.contains({name, endpoint.endpoint});
      if ((endpoint.state == health::EndpointState::kDraining) != draining) {
        health->set_draining(endpoint.endpoint, draining);
        log::get("fleet")->info("fleet endpoint state applied backend={} endpoint={} state={}",
                                name, endpoint.endpoint, draining ? "draining" : "active");
      }
    }
  }
}

void Gateway::publish_fleet_events(std::vector<fleet::FleetEvent> events) {
  for (auto& event : events) {
    // The body keeps the replica's own `ts` (it replaces the one publish() stamps).
    auto data = nlohmann::json::parse(event.body, nullptr, false);
    if (!data.is_object()) {
      data = nlohmann::json::object();
    }
    data["replica"] = std::move(event.replica);
    fleet_events_.publish(event.type, data);
  }
}

void Gateway::start_fleet() {
  if (!fleet_) {
    return;
  }
  fleet_tick();
  if (auto taken = fleet_->start(document_)) {
    apply_fleet(std::move(*taken), true);
  }
}

namespace {

/// This replica's heavy hitters of every policy, as the fleet publishes them (JSON text).
std::string top_publication(insight::TopUsersRegistry& top_users, const config::Config& config) {
  top_users.drain();
  nlohmann::json policies = nlohmann::json::object();
  for (const auto& [name, policy] : config.limits) {
    if (insight::TopUsers* sketch = top_users.find(name)) {
      policies[name] = insight::published_policy(sketch->top(insight::kPublishedUsers),
                                                 sketch->window(), [](std::uint64_t user) {
                                                   const auto label = log::user_label(user);
                                                   return std::string(label.data(), label.size());
                                                 });
    }
  }
  return nlohmann::json{{"at_ms", fleet::wall_ms()},
                        {"shared_labels", config.access_log.user_hash_key_env.has_value()},
                        {"policies", std::move(policies)}}
      .dump();
}

}  // namespace

void Gateway::fleet_tick() {
  if (fleet_ && top_users_) {
    fleet_->set_top(top_publication(*top_users_, *config_));
  }
  if (fleet_) {
    fleet_->tick({{"address", show(admin_endpoint_)},
                  {"started", started_},
                  {"build", SLUICE_VERSION},
                  {"store_fallback", store_fallback()}});
  }
}

void Gateway::apply_fleet(fleet::FleetVersion version, bool authoritative) {
  if (!fleet_ || draining_) {
    return;
  }
  const std::uint64_t running = fleet_->version();
  if (version.version == running || (!authoritative && version.version < running) ||
      version.version == refused_fleet_version_) {
    return;
  }
  if (version.version < running) {
    // Lower than what runs: real only when the fleet holds it now (a replica behind this one
    // re-seeded a Redis that lost its data), not a read that an admin write overtook.
    const auto now = fleet_->read_current();
    if (!now || now->version != version.version) {
      return;
    }
  }
  auto fleet_log = log::get("fleet");
  const auto refuse = [&](const std::string& why) {
    fleet_log->error(
        "fleet version not applied version={} made_by={} error={} (this replica "
        "keeps version {})",
        version.version, version.replica, why, running);
    fleet_->count_apply(false);
    refused_fleet_version_ = version.version;
  };
  auto shared = config::parse_ordered(version.config);
  if (!shared.is_object()) {
    refuse("the fleet's config is not a JSON object");
    return;
  }
  if (fleet::has_shared_part(document_.json(), shared)) {
    fleet_->applied(version);  // the same config (the seed, or a re-seed): nothing to install
    return;
  }
  auto loaded = config::ConfigDocument::from_json(fleet::with_shared(document_.json(), shared));
  if (!loaded.ok()) {
    refuse(config::to_string(loaded.problems.front()));
    return;
  }
  if (auto error = backend_tls_.load(loaded.document->config(), false)) {
    refuse(*error);
    return;
  }
  if (auto error = auth_.load(loaded.document->config(), false)) {
    refuse(*error);
    return;
  }
  install(std::move(*loaded.document));
  fleet_->applied(version);
  fleet_->count_apply(true);
  history_.next_from_fleet({version.version, version.replica});
  record_version(insight::VersionSource::kFleet);
  fleet_log->info("fleet version applied version={} made_by={} lag_ms={}", version.version,
                  version.replica, std::max<std::int64_t>(0, fleet::wall_ms() - version.at_ms));
}

bool Gateway::keep_fleet_part(config::ConfigDocument& read, std::string& problem) {
  const auto running = fleet::shared_part(document_.json());
  if (fleet::has_shared_part(read.json(), running)) {
    return true;
  }
  auto merged = config::ConfigDocument::from_json(fleet::with_shared(read.json(), running));
  if (!merged.ok()) {
    problem = "the file's local part does not fit fleet version " +
              std::to_string(fleet_->version()) + ": " + config::to_string(merged.problems.front());
    log::get("config")->error("reload failed problem={}", problem);
    return false;
  }
  log::get("config")->warn(
      "reload keeps fleet version {} of limits, overrides, tiers, identity, auth, routes and "
      "backends "
      "(the file's differ: change them through any replica's admin API)",
      fleet_->version());
  read = std::move(*merged.document);
  return true;
}

std::optional<admin::CommitError> Gateway::commit_to_fleet(config::ConfigDocument next,
                                                           const admin::CommitOptions& options) {
  auto written = fleet_->write(document_, std::move(next), options, "admin");
  if (auto* error = std::get_if<admin::CommitError>(&written)) {
    return std::move(*error);
  }
  auto& [document, version] = std::get<FleetLink::Written>(written);
  if (config_->admin.persist) {
    // The fleet holds the change now: a file that cannot be written is a warning, not a refusal.
    std::optional<std::string> warning;
    if (auto error = config_file_.write(document_, document, warning)) {
      log_->warn("fleet change not written to the config file error={}", error->detail);
    } else {
      config_watch_.mark_current();
    }
  }
  if (auto error = backend_tls_.load(document.config(), false)) {
    log_->error("fleet version {} needs TLS files this replica cannot read: {}", version.version,
                *error);
  }
  if (auto error = auth_.load(document.config(), false)) {
    log_->error("fleet version {} needs auth files this replica cannot read: {}", version.version,
                *error);
  }
  install(std::move(document));
  fleet_->applied(version);
  history_.next_from_fleet({version.version, version.replica});  // the admin API records it
  return std::nullopt;
}

}  // namespace sluice::app
