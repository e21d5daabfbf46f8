// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics/process_metrics.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include "gateway/metrics/metrics.hpp"

namespace sluice::metrics {
namespace {

// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
// cutime cstime priority nice threads itreal starttime vsize rss ...
constexpr std::string_view kStat =
    "4242 (sl uice) (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 150 0 0 20 0 3 0 1000 "
    "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ReadsTheFieldsAfterTheCommandWhateverItHolds) {
  const auto sample = parse_proc_stat(kStat, 100, 4096, 1'700'000'000);
  ASSERT_TRUE(sample.has_value());
  EXPECT_DOUBLE_EQ(sample->cpu_seconds, 4.0);  // (250 + 150) ticks at 100 per second
  EXPECT_DOUBLE_EQ(sample->resident_bytes, 2048.0 * 4096.0);
  EXPECT_DOUBLE_EQ(sample->virtual_bytes, 123456789.0);
  EXPECT_DOUBLE_EQ(sample->start_time_seconds, 1'700'000'010.0);  // boot + 1000 ticks
}

TEST(ProcessMetricsTest, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(parse_proc_stat("", 100, 4096, 0));
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 2 3", 100, 4096, 0));
  EXPECT_FALSE(parse_proc_stat(kStat, 0, 4096, 0));
  EXPECT_FALSE(
      parse_proc_stat("4242 (x) S 1 4242 4242 0 -1 4194560 900 0 0 0 2x5 150 0 0 20 0 3 "
                      "0 1000 123456789 2048",
                      100, 4096, 0));
}

TEST(ProcessMetricsTest, DescribesThisProcess) {
  std::map<std::string, double> values;
  for (const auto& family : collect_process_metrics()) {
    ASSERT_EQ(family.metric.size(), 1U) << family.name;
    values[family.name] = family.type == prometheus::MetricType::Counter
                              ? family.metric[0].counter.value
                              : family.metric[0].gauge.value;
  }
  EXPECT_GE(values.at("process_open_fds"), 3.0);  // at least stdin, stdout, stderr
  EXPECT_GT(values.at("process_resident_memory_bytes"), 1e6);
  EXPECT_GE(values.at("process_virtual_memory_bytes"), values.at("process_resident_memory_bytes"));
  EXPECT_GE(values.at("process_cpu_seconds_total"), 0.0);
  EXPECT_GT(values.at("process_max_fds"), values.at("process_open_fds"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Started before now, and within the last day (a test process): the boot time was read.
  EXPECT_LE(values.at("process_start_time_seconds"), now + 1);
  EXPECT_GT(values.at("process_start_time_seconds"), now - 86400);
}

TEST(ProcessMetricsTest, AreInEveryScrapeWithTheirTypes) {
  Metrics metrics("test");
  const std::string text = metrics.scrape();
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE process_resident_memory_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("\nprocess_open_fds "), std::string::npos);
  EXPECT_NE(text.find("\nprocess_start_time_seconds "), std::string::npos);
}

}  // namespace
}  // namespace sluice::metrics
