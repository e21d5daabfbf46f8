// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics/fleet_metrics.hpp"

namespace sluice::metrics {
namespace {

// From a millisecond (a change on this host) to seconds (a replica that was away).
const prometheus::Histogram::BucketBoundaries& sync_buckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return kBuckets;
}

}  // namespace

FleetMetrics::FleetMetrics(prometheus::Registry& registry) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  connected_ = &BuildGauge()
                    .Name("sluice_fleet_connected")
                    .Help("1 while the fleet's Redis answers, else 0.")
                    .Register(registry)
                    .Add({});
  version_ = &BuildGauge()
                  .Name("sluice_fleet_config_version")
                  .Help("The fleet config version this replica runs (0: none yet).")
                  .Register(registry)
                  .Add({});
  auto& replicas = BuildGauge()
                       .Name("sluice_fleet_replicas")
                       .Help("Replicas of the fleet by state (ok, lost: 5 heartbeats missed).")
                       .Register(registry);
  ok_ = &replicas.Add({{"state", "ok"}});
  lost_ = &replicas.Add({{"state", "lost"}});
  sync_ = &BuildHistogram()
               .Name("sluice_fleet_sync_seconds")
               .Help("From a fleet change made (on any replica) to applied on this one.")
               .Register(registry)
               .Add({}, sync_buckets());
  auto& applies = BuildCounter()
                      .Name("sluice_fleet_applies_total")
                      .Help("Fleet versions this replica applied, by result (ok, error).")
                      .Register(registry);
  applied_ok_ = &applies.Add({{"result", "ok"}});
  applied_error_ = &applies.Add({{"result", "error"}});
}

}  // namespace sluice::metrics
