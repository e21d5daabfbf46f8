// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "gateway/admin/admin_api.hpp"
#include "gateway/app/fleet_inbox.hpp"
#include "gateway/config/config.hpp"
#include "gateway/config/config_document.hpp"
#include "gateway/fleet/fleet_document.hpp"
#include "gateway/fleet/fleet_redis.hpp"
#include "gateway/fleet/fleet_store.hpp"
#include "gateway/fleet/fleet_sync.hpp"
#include "gateway/metrics/fleet_metrics.hpp"
#include "gateway/metrics/metrics.hpp"

namespace sluice::app {

/// This replica's end of the fleet (docs/fleet.md): takes the fleet's version at start, writes
/// admin changes to it as compare-and-set (merging onto a version that moved on), and runs the
/// fleet thread that brings other replicas' changes. The blocking calls here (start, write) are
/// the control thread's, bounded by fleet.sync_timeout_ms
/// (docs/decisions/0021-fleet-through-redis.md). Confined to the control thread but for
/// the fleet thread's deliveries (behind a mutex; `wake` posts) and take_deliveries().
class FleetLink {
 public:
  /// Called on the fleet thread when something was delivered and nothing was waiting: it must
  /// post a call of take_deliveries() to the control thread.
  using Wake = std::function<void()>;

  FleetLink(const config::Config& config, metrics::Metrics& metrics, Wake wake,
            std::shared_ptr<spdlog::logger> log);
  ~FleetLink();
  FleetLink(const FleetLink&) = delete;
  FleetLink& operator=(const FleetLink&) = delete;

  /// At start: the fleet's version, seeded with `running`'s shared part when the fleet has
  /// none; nullopt when Redis is unavailable (the fleet thread keeps trying). Then starts the
  /// fleet thread.
  [[nodiscard]] std::optional<fleet::FleetVersion> start(const config::ConfigDocument& running);
  void stop();

  struct Written {
    config::ConfigDocument document;  ///< what to install: `next`, or it merged onto newer
    fleet::FleetVersion version;
  };
  /// Makes `next` (made from `base`) the fleet's next version: compare-and-set against
  /// `if_match` or the version applied; when another replica wrote first (and no If-Match),
  /// the change (base to next) is carried onto the newer version and tried again.
  [[nodiscard]] std::variant<Written, admin::CommitError> write(const config::ConfigDocument& base,
                                                                config::ConfigDocument next,
                                                                const admin::CommitOptions& options,
                                                                std::string_view source);
  /// The fleet's version now, read from Redis (to tell a real regression from a stale one).
  [[nodiscard]] std::optional<fleet::FleetVersion> read_current();

  /// Sends one of this replica's live events to the fleet's event stream (queued).
  void publish_event(std::string type, std::string body) {
    sync_.publish_event(std::move(type), std::move(body));
  }
  /// Drains (or makes active) an endpoint fleet-wide (a blocking write, bounded by
  /// sync_timeout_ms); the error when Redis did not take it (then nothing changed).
  [[nodiscard]] std::optional<admin::CommitError> share_draining(const std::string& backend,
                                                                 const std::string& endpoint,
                                                                 bool draining);
  /// What the fleet thread delivered since the last call (fleet_inbox.hpp).
  [[nodiscard]] FleetInbox::Deliveries take_deliveries() { return inbox_.take(); }

  /// The control thread ran `version` (made `at_ms`): heartbeat, gauge, sync histogram.
  void applied(const fleet::FleetVersion& version);
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }
  void count_apply(bool ok) { metrics_.count_apply(ok); }
  /// Refreshes the heartbeat's fields and the gauges (the control thread's tick).
  void tick(nlohmann::json heartbeat);
  /// This replica's heavy hitters, for the fleet thread to publish (insight/fleet_top.hpp).
  void set_top(std::string top) { sync_.set_top(std::move(top)); }
  /// Every replica's published heavy hitters (a blocking read, bounded by sync_timeout_ms).
  [[nodiscard]] std::optional<std::map<std::string, std::string>> published_tops() {
    return store_.published_tops();
  }
  /// GET /admin/fleet.
  [[nodiscard]] nlohmann::json view() const;
  [[nodiscard]] const std::string& replica_id() const noexcept { return replica_id_; }

 private:
  config::FleetConfig config_;
  std::string replica_id_;
  Wake wake_;
  FleetInbox inbox_;
  fleet::FleetRedis redis_;  ///< the control thread's own connection
  fleet::FleetStore store_;
  metrics::FleetMetrics metrics_;
  fleet::FleetSync sync_;
  std::shared_ptr<spdlog::logger> log_;
  std::uint64_t version_ = 0;  ///< the fleet version this replica runs (0: none yet)
  bool joined_ = false;        ///< applied() ran once (the version taken at start)
};

/// The fleet's Redis connection settings: the store's (host, port, password from its env var).
[[nodiscard]] fleet::FleetRedis::Options fleet_redis_options(const config::Config& config);

}  // namespace sluice::app
