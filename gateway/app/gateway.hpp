// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gateway/admin/admin_api.hpp"
#include "gateway/admin/admin_server.hpp"
#include "gateway/app/auth_setup.hpp"
#include "gateway/app/backend_tls.hpp"
#include "gateway/app/config_file.hpp"
#include "gateway/app/config_watch.hpp"
#include "gateway/app/fleet_link.hpp"
#include "gateway/app/jwks_refresher.hpp"
#include "gateway/app/service_notifier.hpp"
#include "gateway/app/store_setup.hpp"
#include "gateway/app/tls_listeners.hpp"
#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/config/config.hpp"
#include "gateway/config/config_document.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/insight/config_history.hpp"
#include "gateway/insight/event_feed.hpp"
#include "gateway/insight/state_watcher.hpp"
#include "gateway/insight/top_users.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/log/logging.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/routing/config_sync.hpp"
#include "gateway/proxy/routing/snapshot.hpp"
#include "gateway/proxy/session/connection_gate.hpp"
#include "gateway/proxy/session/services.hpp"
#include "gateway/proxy/session/worker.hpp"
#include "gateway/proxy/upstream/health_checker.hpp"

namespace sluice::app {

/// The composition root (docs/architecture.md, "Threads"): owns the clock, the config snapshots,
/// the worker threads (one io_context each, each accepting on its own SO_REUSEPORT socket), the
/// admin listener and the signal handling on the main thread. SIGHUP reloads the config file
/// and the TLS certificates; SIGUSR1 reopens the access log file; SIGTERM/SIGINT drain (a
/// second signal cuts the drain short). The admin API's changes and SIGHUP reloads both run on the
/// main thread, one at a time. Not thread-safe: run() is called once, from main.
class Gateway {
 public:
  Gateway(std::filesystem::path config_path, config::ConfigDocument document);
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;
  ~Gateway();

  /// Binds, serves until drained; the exit code (0 after a drain, 1 when binding failed).
  int run();

 private:
  bool bind_listeners();
  bool bind_admin();
  boost::asio::awaitable<admin::Reply> handle_admin(const admin::Request& req,
                                                    const boost::asio::ip::tcp::endpoint& peer);
  /// The admin API's commit: persists `next` (admin.persist), then installs it.
  std::optional<admin::CommitError> commit(config::ConfigDocument next,
                                           const admin::CommitOptions& options = {});
  void wait_for_signal();
  /// SIGHUP: the config file, then the TLS certificates; counted once.
  void reload();
  /// Re-reads the config file and installs it; false when it is invalid.
  bool reload_config(std::string& problem);
  /// Binds `next`, publishes its snapshot, and retires what it no longer has. The backends'
  /// client TLS must be loaded for it (backend_tls_).
  void install(config::ConfigDocument next);
  /// Starts or stops the config file watch as config_->config_watch says.
  void watch_config_file();
  // gateway_fleet.cpp (docs/fleet.md):
  void make_fleet();   ///< fleet_ when fleet.enabled (from the constructor, before the API)
  void start_fleet();  ///< takes the fleet's version (or seeds it), starts the fleet thread
  /// The heartbeat's fields, the heavy hitters to publish and the fleet gauges, from the tick.
  void fleet_tick();
  /// Drains exactly the endpoints the fleet drained (the others are made active).
  void apply_fleet_draining(const fleet::DrainedEndpoints& drained);
  /// Every replica's events (fleet's stream) to fleet_events_, each with its `replica`.
  void publish_fleet_events(std::vector<fleet::FleetEvent> events);
  /// Runs a fleet version here (posted by the fleet thread, or taken at start).
  void apply_fleet(fleet::FleetVersion version, bool authoritative);
  /// A reload in a fleet: `read` (the file) with the fleet's shared part that runs; false
  /// (with `problem`) when the file's local part does not fit it.
  bool keep_fleet_part(config::ConfigDocument& read, std::string& problem);
  /// commit() in a fleet: the fleet first, then here.
  std::optional<admin::CommitError> commit_to_fleet(config::ConfigDocument next,
                                                    const admin::CommitOptions& options);
  /// `config` bound to the state that outlives versions, with its backends' client TLS.
  proxy::Bindings bind(const config::Config& config);
  /// POST /admin/tls/reload: every listener certificate and backend TLS file again.
  std::optional<std::string> reload_tls();
  /// Scrape hook: sets the gauges that mirror live state.
  void refresh_gauges();
  /// Once a second on the main thread: the store's housekeeping, retired metric series, ended
  /// ejections.
  void schedule_tick();
  /// Ends the outlier ejections that are over, with a log line each.
  void end_ejections();
  // gateway_versions.cpp (docs/operating.md "Versions and rollback"):
  /// Records document_ as a version of `source` (start, reload), summarized against the last.
  void record_version(insight::VersionSource source);
  /// The admin API's dry-run check: what commit(next) would refuse, with nothing changed.
  [[nodiscard]] std::optional<admin::CommitError> check_commit(
      const config::ConfigDocument& next) const;
  /// POST /admin/tls/reload?dry_run=true: every TLS file read and checked, none installed.
  [[nodiscard]] std::optional<std::string> preview_tls(nlohmann::json& would_serve) const;
  /// The access log's `user` label of a raw key.
  [[nodiscard]] std::string key_label(std::string_view key) const;
  // gateway_insight.cpp (docs/operating.md "Live events"):
  /// Starts the state watcher (its baseline is the state now) and the heavy hitters' drain.
  void start_insight();
  /// Applies the workers' queued decisions to the heavy-hitter sketches every
  /// kTopUsersDrainInterval (docs/decisions/0018-heavy-hitters-off-the-data-path.md).
  void schedule_top_users_drain();
  /// At the drain: stops the watcher and ends every event stream.
  void stop_insight();
  /// Stops control_ once every event stream has sent its end (at most kStreamsGrace).
  void stop_after_streams();
  /// Publishes `type` {ok, error?} (a TLS reload's outcome).
  void publish_outcome(std::string_view type, const std::optional<std::string>& error);
  /// Publishes `reload` {ok, version?, error?} for a SIGHUP.
  void publish_reload(const std::optional<std::string>& error);
  /// Whether the limit store's on_error fallback is in force.
  [[nodiscard]] bool store_fallback() const;
  /// GET /admin/insight/breakers.
  [[nodiscard]] nlohmann::json breaker_history() const;
  void begin_drain();
  void check_drain();
  void finish();

  ConfigFile config_file_;
  config::ConfigDocument document_;               ///< what runs now (admin changes included)
  std::shared_ptr<const config::Config> config_;  ///< document_'s config
  /// The listeners bound at start (a reload cannot change them): their names outlive every
  /// config, so workers, sessions and log lines may view them.
  const std::vector<config::ListenerConfig> listeners_;
  std::optional<std::string> admin_token_;    ///< from the env var admin.token_env names
  std::optional<std::string> startup_error_;  ///< why run() must refuse to start
  std::shared_ptr<spdlog::logger> log_;
  ServiceNotifier notifier_;  ///< READY, RELOADING, STOPPING to systemd (NOTIFY_SOCKET)
  core::SteadyClock clock_;
  core::SystemRandom random_;
  metrics::Metrics metrics_;
  TlsListeners tls_;                        ///< the TLS listeners' certificates and ticket keys
  BackendTls backend_tls_;                  ///< the client TLS of the backends that speak TLS
  auth::CredentialSlot credentials_;        ///< what verifies JWTs and API keys (every worker)
  proxy::AuthFailureLedger auth_failures_;  ///< auth.failure_policy's counts
  AuthSetup auth_;                          ///< fills the two above from each config version
  StoreSetup store_;
  breaker::BreakerRegistry breakers_;
  health::HealthRegistry health_;
  /// Each policy's heavy hitters; null with admin.top_users off (read at start only).
  std::unique_ptr<insight::TopUsersRegistry> top_users_;
  proxy::ConfigSync sync_;
  proxy::SnapshotSource snapshots_;
  proxy::ConnectionGate gate_;
  log::AccessLog access_log_;
  proxy::Services services_;
  std::vector<std::unique_ptr<proxy::Worker>> workers_;
  std::vector<std::thread> threads_;

  boost::asio::io_context control_{1};  ///< main thread: admin listener, signals, drain timer
  store::StoreSlot control_slot_;       ///< the main thread's slot in the store
  boost::asio::signal_set signals_{control_};
  boost::asio::steady_timer drain_timer_{control_};
  boost::asio::steady_timer tick_timer_{control_};
  std::unique_ptr<JwksRefresher> jwks_;  ///< auth.jwt.jwks_url's fetches, on the main thread
  std::unique_ptr<proxy::HealthChecker> checker_;  ///< active checks, on the main thread
  insight::ConfigHistory history_;   ///< config versions (admin.persist: <config>.history.json)
  insight::EventFeed events_;        ///< GET /admin/events; every publisher runs on the main thread
  insight::EventFeed fleet_events_;  ///< ?scope=fleet: every replica's, from the fleet's stream
  /// Samples breakers, the store's fallback and endpoint states for the feed (from run()).
  std::unique_ptr<insight::StateWatcher> watcher_;
  boost::asio::steady_timer streams_timer_{control_};    ///< at the end: streams still ending
  boost::asio::steady_timer top_users_timer_{control_};  ///< the heavy hitters' drain
  /// With fleet.enabled: this replica's end of the fleet (its thread posts to control_).
  std::unique_ptr<FleetLink> fleet_;
  std::uint64_t refused_fleet_version_ = 0;  ///< a fleet version that cannot run here (logged)
  std::string started_;                      ///< when run() began (UTC), for the heartbeat
  ConfigWatch config_watch_{
      // config_watch: a change of the file's bytes reloads (SIGHUP)
      control_, config_file_.path(), [this] { reload(); }, log::get("config")};
  core::TimePoint streams_deadline_{};
  std::unique_ptr<admin::AdminApi> admin_api_;
  std::shared_ptr<admin::AdminServer> admin_;
  /// Where each of `config_->listeners` listens (in order), once bound.
  std::vector<boost::asio::ip::tcp::endpoint> listener_endpoints_;
  /// Per HTTP/2 listener: its GOAWAY counters (the workers hold pointers; they outlive them).
  std::vector<std::unique_ptr<proxy::GoawayCounters>> goaways_;
  boost::asio::ip::tcp::endpoint admin_endpoint_;
  core::TimePoint drain_deadline_{};
  bool draining_ = false;
  std::atomic<std::size_t> cut_{0};
  std::uint64_t dropped_reported_ = 0;  ///< access log lines already in the dropped counter
};

}  // namespace sluice::app
