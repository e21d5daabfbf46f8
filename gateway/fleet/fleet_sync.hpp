// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/fleet/fleet_redis.hpp"
#include "gateway/fleet/fleet_store.hpp"

namespace spdlog {
class logger;
}

namespace sluice::fleet {

/// The fleet's own thread (docs/fleet.md, "How a change travels"): waits on the change log
/// and the event stream (one XREAD BLOCK of at most 100 ms), hands each newer version to `apply`
/// and the events to `events`, sends this replica's queued events; every heartbeat it publishes
/// this replica's heartbeat, reads the fleet's version (the fallback when a log entry was missed),
/// re-seeds a fleet Redis lost with the version this replica runs, and refreshes the replica
/// list (a replica 5 heartbeats late is lost, one 60 s lost is forgotten). Blocking Redis
/// calls, all on this thread (docs/decisions/0021-fleet-through-redis.md).
///
/// Thread-safe: applied(), set_heartbeat(), connected() and replicas() may be called from any
/// thread. `apply` runs on the fleet thread and must hand the version over (post it) to the
/// thread that installs configs; it is never called after stop() returns.
class FleetSync {
 public:
  /// The longest time between two publications of this replica's heavy hitters.
  static constexpr std::chrono::milliseconds kPublishTopEvery{2000};

  /// Called with a version to run: from the log (newer than the one applied), or read from the
  /// fleet's record (`authoritative`: what the fleet holds now, whatever its number; after a
  /// re-seed it may be lower than the one applied).
  using Apply = std::function<void(FleetVersion, bool authoritative)>;
  /// Called with the events every replica (this one too) added to the fleet's event stream.
  using Events = std::function<void(std::vector<FleetEvent>)>;
  /// Called with the endpoints drained fleet-wide whenever that set changed (and first when
  /// it was read).
  using Drained = std::function<void(DrainedEndpoints)>;
  /// Where the fleet thread hands what it read; each must hand it over (post it).
  struct Handlers {
    Apply apply;
    Events events;
    Drained drained;
  };
  /// Local events kept while Redis is away; past this the oldest are dropped.
  static constexpr std::size_t kMaxOutgoingEvents = 1000;

  FleetSync(FleetRedis::Options redis, config::FleetConfig config, std::string replica_id,
            Handlers handlers, std::shared_ptr<spdlog::logger> log);
  FleetSync(const FleetSync&) = delete;
  FleetSync& operator=(const FleetSync&) = delete;
  ~FleetSync();

  void start();
  /// Stops the thread (within about 100 ms) and joins it.
  void stop();

  /// What this replica runs now: its fleet version and that version's shared config (JSON
  /// text), for the heartbeat and a re-seed.
  void applied(std::uint64_t version, std::string config);
  /// The fields of this replica's heartbeat (address, build, started, store_fallback, ...);
  /// replica, version and last_seen_ms are added on each beat.
  void set_heartbeat(nlohmann::json fields);
  /// Queues one of this replica's live events (its SSE body, JSON text) for the fleet's event
  /// stream; sent before the next read, so within about 100 ms.
  void publish_event(std::string type, std::string body);
  /// This replica's heavy hitters (JSON text, insight/fleet_top.hpp), published every
  /// heartbeat or every kPublishTopEvery, whichever is sooner; empty: nothing to publish.
  void set_top(std::string top);
  [[nodiscard]] bool connected() const noexcept { return connected_.load(); }
  /// The replicas as of the last heartbeat, each with `state` ok or lost.
  [[nodiscard]] nlohmann::json replicas() const;
  [[nodiscard]] const std::string& replica_id() const noexcept { return replica_id_; }

 private:
  void run();
  /// One heartbeat: publish ours, check the fleet's version, refresh the replica list.
  void beat(FleetStore& store);
  void refresh_replicas(FleetStore& store, std::int64_t now_ms);
  void publish_top(FleetStore& store);
  void send_events(FleetStore& store);
  /// Reads the drained endpoints; hands them over when they differ from the last read.
  void refresh_draining(FleetStore& store);
  /// Waits `how_long` unless stop() comes first; false when stopping.
  bool pause(std::chrono::milliseconds how_long);

  FleetRedis::Options redis_options_;
  config::FleetConfig config_;
  std::string replica_id_;
  Apply apply_;
  Events events_;
  Drained drained_;
  std::shared_ptr<spdlog::logger> log_;

  mutable std::mutex mutex_;  // everything below but the atomics and the thread
  std::condition_variable wake_;
  bool stopping_ = false;
  std::uint64_t applied_version_ = 0;
  std::string applied_config_;
  nlohmann::json heartbeat_ = nlohmann::json::object();
  std::string top_;
  std::deque<FleetEvent> outgoing_;
  std::optional<DrainedEndpoints> drained_seen_;  ///< the fleet thread's own
  nlohmann::json replicas_ = nlohmann::json::array();
  std::atomic<bool> connected_{false};
  std::thread thread_;
};

/// `fleet.replica_id`, or the host name and a random suffix.
[[nodiscard]] std::string replica_id_for(const config::FleetConfig& config);
/// Wall-clock milliseconds since the epoch (fleet timestamps cross hosts).
[[nodiscard]] std::int64_t wall_ms();

}  // namespace sluice::fleet
