// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/fleet/fleet_redis.hpp"

namespace sluice::fleet {

/// One fleet version: the shared part of the config as JSON text, and where and when it was
/// made (wall-clock milliseconds since the epoch).
struct FleetVersion {
  std::uint64_t version = 0;
  std::string config;
  std::string replica;
  std::int64_t at_ms = 0;
};

/// What a compare-and-set write did: applied as `version`, or refused because the fleet is at
/// `version` now, or not made at all (Redis unavailable).
struct WriteOutcome {
  enum class Result { kApplied, kMismatch, kUnavailable };
  Result result = Result::kUnavailable;
  std::uint64_t version = 0;
  /// kMismatch because another replica holds the write turn (FleetStore::write).
  bool turn_held = false;
  /// kMismatch, and this replica holds the turn now: its next write is the one taken.
  bool turn_ours = false;
};

/// One event of a replica's live event feed, as the fleet carries it (docs/fleet.md): its
/// type and its body (JSON text, with its `ts`).
struct FleetEvent {
  std::string replica;
  std::string type;
  std::string body;
};

/// The endpoints an operator drained fleet-wide: (backend, endpoint) pairs.
using DrainedEndpoints = std::set<std::pair<std::string, std::string>>;

/// The event type a fleet-wide drain adds to the event stream, so replicas re-read the set.
inline constexpr std::string_view kDrainEvent = "endpoint_state";

/// Where a replica has read the change log and the event stream to (stream ids).
struct LogCursor {
  std::string log_id;
  std::string events_id;
};

/// What one read of the change log and the event stream brought.
struct LogRead {
  std::vector<FleetVersion> versions;  ///< `config` empty: current() has it
  std::vector<FleetEvent> events;
};

/// The fleet's keys in Redis (docs/fleet.md, "In Redis"), all under the hash tag
/// `{NAME}` (`sluice-fleet:{NAME}:...`) so they share one Redis Cluster slot and one Lua script
/// may touch them: `...:doc` (a hash: version, config, replica, at_ms), `...:log` (a stream, the
/// change log: one entry per version without its config, which only the doc holds; oldest
/// trimmed past about 1,000) and `...:replicas` (a
/// hash: replica id to its heartbeat, JSON) and `...:top` (a hash: replica id to its heavy
/// hitters, JSON) `...:events` (a stream: every replica's live events) and `...:draining` (a hash:
/// the endpoints drained fleet-wide, `["backend","endpoint"]` to 1) and `...:turn` (a string with
/// a time to live: the replica whose write goes next). Every write is one script, so
/// a version and its log entry are made together or not at all. Confined to the thread of its
/// FleetRedis, which must outlive it.
class FleetStore {
 public:
  FleetStore(FleetRedis& redis, const std::string& fleet_name);

  /// The fleet's version; when the fleet has none (new, or Redis lost its data), `seed`
  /// becomes it first. nullopt: Redis unavailable.
  [[nodiscard]] std::optional<FleetVersion> take_or_seed(const FleetVersion& seed,
                                                         const std::string& source);
  /// How long a write turn holds at most (a replica that took one and died frees it then).
  static constexpr int kTurnMs = 250;

  /// Makes `next` (config, replica, at_ms) the fleet's version `expected + 1` if the fleet is
  /// still at `expected` and no other replica holds the write turn. A refused writer that
  /// passes `claim_turn` takes the turn when it is free: until its next write (or kTurnMs),
  /// every other replica's write is refused, so a writer that lost again and again cannot
  /// keep losing (docs/fleet.md, "Writes").
  [[nodiscard]] WriteOutcome write(std::uint64_t expected, const FleetVersion& next,
                                   const std::string& source, const std::string& summary,
                                   bool claim_turn = false);
  /// Gives back the write turn if `replica` holds it (a write that will not be made); whether
  /// it did.
  bool release_turn(const std::string& replica);
  /// The fleet's version now: nullopt when unavailable, a version 0 when the fleet has none.
  [[nodiscard]] std::optional<FleetVersion> current();
  /// The versions logged and the events added after `cursor` (moved past what was read),
  /// waiting up to `block` for one. nullopt: unavailable.
  [[nodiscard]] std::optional<LogRead> read(LogCursor& cursor, std::chrono::milliseconds block);
  /// A cursor at the newest entries of the log and the event stream. nullopt: unavailable.
  [[nodiscard]] std::optional<LogCursor> newest();
  /// Adds one event to the event stream (the oldest trimmed past about 1,000).
  bool add_event(const FleetEvent& event);
  /// Publishes this replica's heartbeat (JSON text).
  bool heartbeat(const std::string& replica, const std::string& heartbeat);
  /// Every replica's last heartbeat. nullopt: unavailable.
  [[nodiscard]] std::optional<std::map<std::string, std::string>> replicas();
  /// Publishes this replica's heavy hitters (JSON text, insight/fleet_top.hpp).
  bool publish_top(const std::string& replica, const std::string& top);
  /// Every replica's last published heavy hitters. nullopt: unavailable.
  [[nodiscard]] std::optional<std::map<std::string, std::string>> published_tops();
  /// Drains (or makes active again) an endpoint fleet-wide: the set, then a kDrainEvent
  /// event from `replica` so every replica re-reads it at once.
  bool set_draining(const std::string& replica, const std::string& backend,
                    const std::string& endpoint, bool draining);
  /// The endpoints drained fleet-wide. nullopt: unavailable.
  [[nodiscard]] std::optional<DrainedEndpoints> draining();
  /// Removes a replica's heartbeat and heavy hitters (it has been lost too long).
  bool forget(const std::string& replica);

 private:
  bool put(const std::string& hash, const std::string& replica, const std::string& text);
  [[nodiscard]] std::optional<std::map<std::string, std::string>> all(const std::string& hash);

  FleetRedis& redis_;
  std::string doc_;
  std::string log_;
  std::string replicas_;
  std::string top_;
  std::string events_;
  std::string draining_;
  std::string turn_;
};

}  // namespace sluice::fleet
