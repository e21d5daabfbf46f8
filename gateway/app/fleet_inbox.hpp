// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

#include "gateway/fleet/fleet_store.hpp"

namespace sluice::app {

/// What the fleet thread hands the control thread (docs/fleet.md, "How a change travels"): the
/// newest version to run, the fleet's events, the endpoints drained fleet-wide. A put reports
/// whether the inbox was empty, and only then must the caller wake the control thread, which
/// takes everything at once: so a put after a take always wakes it again, and a put while a
/// wake is pending never posts a second one. Thread-safe.
class FleetInbox {
 public:
  /// Events kept while the control thread is busy; past this the oldest are dropped.
  static constexpr std::size_t kMaxEvents = 1024;

  /// A version this replica should run; `authoritative` as fleet::FleetSync::Apply.
  struct Version {
    fleet::FleetVersion version;
    bool authoritative = false;
  };
  struct Deliveries {
    /// The newest only: versions it replaced before the control thread came are skipped, so a
    /// busy control thread never builds a backlog of versions no longer current.
    std::optional<Version> version;
    std::vector<fleet::FleetEvent> events;           ///< oldest first
    std::optional<fleet::DrainedEndpoints> drained;  ///< when the set changed

    [[nodiscard]] bool empty() const {
      return !version.has_value() && events.empty() && !drained.has_value();
    }
  };

  /// Each returns true when the inbox was empty (wake the control thread).
  [[nodiscard]] bool put_version(fleet::FleetVersion version, bool authoritative);
  [[nodiscard]] bool put_events(std::vector<fleet::FleetEvent> events);
  [[nodiscard]] bool put_drained(fleet::DrainedEndpoints drained);
  /// Everything waiting, leaving the inbox empty.
  [[nodiscard]] Deliveries take();

 private:
  std::mutex mutex_;
  Deliveries waiting_;  ///< guarded by mutex_
};

}  // namespace sluice::app
