// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

// The standard process metrics every Prometheus client library exports (process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds,
// process_max_fds, process_start_time_seconds), read from Linux's /proc at each scrape
// (docs/operations.md, "Metrics"). prometheus-cpp has no such collector.
namespace sluice::metrics {

/// One reading of the process.
struct ProcessSample {
  double cpu_seconds = 0;  ///< user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  ///< since the Unix epoch
};

/// The sample in the text of /proc/self/stat (proc(5): fields after the command's closing
/// parenthesis; the command itself may hold spaces and parentheses), given the clock ticks per
/// second, the page size and the boot time (`btime` of /proc/stat, seconds since the epoch).
/// Nothing when the text is not such a line. Pure.
[[nodiscard]] std::optional<ProcessSample> parse_proc_stat(std::string_view stat,
                                                           std::uint64_t ticks_per_second,
                                                           std::uint64_t page_bytes,
                                                           std::uint64_t boot_time);

/// The process_* families now, from /proc/self (empty families are left out: a missing /proc
/// makes the scrape lack them rather than fail). Reads a few small in-memory /proc files: the
/// admin thread calls it per scrape, never a data-path thread. Thread-safe.
[[nodiscard]] std::vector<prometheus::MetricFamily> collect_process_metrics();

}  // namespace sluice::metrics
