// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace sluice::metrics {
namespace {

/// The whitespace-separated field `index` (0 = the first) of `text`.
std::optional<std::uint64_t> field(std::string_view text, std::size_t index) {
  std::size_t pos = 0;
  for (std::size_t i = 0;; ++i) {
    pos = text.find_first_not_of(' ', pos);
    if (pos == std::string_view::npos) {
      return std::nullopt;
    }
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    if (i == index) {
      std::uint64_t value = 0;
      const auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, value);
      if (ec != std::errc{} || ptr != text.data() + end) {
        return std::nullopt;
      }
      return value;
    }
    pos = end;
  }
}

std::string read_small_file(const char* path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t boot_time() {
  const std::string stat = read_small_file("/proc/stat");
  const std::size_t at = stat.find("\nbtime ");
  if (at == std::string::npos) {
    return 0;
  }
  const std::size_t begin = at + 7;
  const std::size_t end = std::min(stat.find('\n', begin), stat.size());
  return field(std::string_view(stat).substr(begin, end - begin), 0).value_or(0);
}

prometheus::MetricFamily family(std::string name, std::string help, prometheus::MetricType type,
                                double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return prometheus::MetricFamily{std::move(name), std::move(help), type, {metric}};
}

double open_fds() {
  std::error_code ec;
  double n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n;
}

}  // namespace

std::optional<ProcessSample> parse_proc_stat(std::string_view stat, std::uint64_t ticks_per_second,
                                             std::uint64_t page_bytes, std::uint64_t boot_time) {
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second == 0) {
    return std::nullopt;
  }
  // After "pid (comm) ": state is field 3 of proc(5), so field N is index N - 3 here.
  const std::string_view rest = stat.substr(close + 1);
  const auto utime = field(rest, 14 - 3);
  const auto stime = field(rest, 15 - 3);
  const auto start = field(rest, 22 - 3);
  const auto vsize = field(rest, 23 - 3);
  const auto rss = field(rest, 24 - 3);
  if (!utime || !stime || !start || !vsize || !rss) {
    return std::nullopt;
  }
  const auto ticks = static_cast<double>(ticks_per_second);
  return ProcessSample{
      .cpu_seconds = static_cast<double>(*utime + *stime) / ticks,
      .resident_bytes = static_cast<double>(*rss) * static_cast<double>(page_bytes),
      .virtual_bytes = static_cast<double>(*vsize),
      .start_time_seconds = static_cast<double>(boot_time) + static_cast<double>(*start) / ticks,
  };
}

std::vector<prometheus::MetricFamily> collect_process_metrics() {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  const auto sample = parse_proc_stat(
      read_small_file("/proc/self/stat"), static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK)),
      static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)), boot_time());
  if (sample) {
    out.push_back(family("process_cpu_seconds_total",
                         "Total user and system CPU time spent in seconds.", MetricType::Counter,
                         sample->cpu_seconds));
    out.push_back(family("process_resident_memory_bytes", "Resident memory size in bytes.",
                         MetricType::Gauge, sample->resident_bytes));
    out.push_back(family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                         MetricType::Gauge, sample->virtual_bytes));
    out.push_back(family("process_start_time_seconds",
                         "Start time of the process since unix epoch in seconds.",
                         MetricType::Gauge, sample->start_time_seconds));
  }
  out.push_back(family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                       open_fds()));
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    out.push_back(family("process_max_fds", "Maximum number of open file descriptors.",
                         MetricType::Gauge, static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace sluice::metrics
