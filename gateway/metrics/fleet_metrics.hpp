// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace sluice::metrics {

/// The fleet's metrics (docs/fleet.md, "Metrics"), registered with the gateway's registry when
/// the fleet is on. Thread-safe; the registry outlives it.
class FleetMetrics {
 public:
  explicit FleetMetrics(prometheus::Registry& registry);

  /// `sluice_fleet_connected`: 1 while the fleet's Redis answers.
  prometheus::Gauge& connected() { return *connected_; }
  /// `sluice_fleet_config_version`: the fleet version this replica runs (0: none yet).
  prometheus::Gauge& version() { return *version_; }
  /// `sluice_fleet_replicas{state}`, state ok or lost.
  prometheus::Gauge& replicas(bool lost) { return lost ? *lost_ : *ok_; }
  /// `sluice_fleet_sync_seconds`: from a change made (on any replica) to applied here.
  prometheus::Histogram& sync_seconds() { return *sync_; }
  /// `sluice_fleet_applies_total{result}`, result ok or error (a version this replica could
  /// not run: invalid with its local part, or its TLS files unreadable).
  void count_apply(bool ok) { (ok ? applied_ok_ : applied_error_)->Increment(); }

 private:
  prometheus::Gauge* connected_;
  prometheus::Gauge* version_;
  prometheus::Gauge* ok_;
  prometheus::Gauge* lost_;
  prometheus::Histogram* sync_;
  prometheus::Counter* applied_ok_;
  prometheus::Counter* applied_error_;
};

}  // namespace sluice::metrics
