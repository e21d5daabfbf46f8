// SPDX-License-Identifier: Apache-2.0
// A backend's endpoint health and retry objects: `health_check`, `outlier` and `retry`
// (docs/endpoint-health.md).
#include <algorithm>
#include <string_view>

#include "gateway/config/config_sections.hpp"

namespace sluice::config::detail {
namespace {

/// A list of HTTP statuses in [100, 599] at `key`; `fallback` when absent.
std::vector<int> parse_statuses(ObjectReader& reader, std::string_view key,
                                std::vector<int> fallback) {
  const auto* list = reader.array(key);
  if (list == nullptr) {
    return fallback;
  }
  std::vector<int> statuses;
  const auto list_path = reader.path_of(key);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto status =
        read_integer((*list)[i], element_path(list_path, i), 100, 599, reader.problems());
    if (status) {
      statuses.push_back(static_cast<int>(*status));
    }
  }
  if (statuses.empty() && !list->empty()) {
    return fallback;  // every element was reported
  }
  return statuses;
}

/// A health check path: origin-form, printable ASCII without spaces (it goes into a request
/// line as written).
bool is_check_path(std::string_view path) {
  return !path.empty() && path.front() == '/' && path.size() <= 1024 &&
         std::all_of(path.begin(), path.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

/// `retry.on`: "connect_error", "reset", "timeout" and statuses (numbers), in any mix.
void parse_retry_on(ObjectReader& reader, RetryConfig& retry) {
  const auto* list = reader.array("on");
  if (list == nullptr) {
    return;
  }
  retry.on_connect_error = retry.on_reset = retry.on_timeout = false;
  retry.on_statuses.clear();
  const auto list_path = reader.path_of("on");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& item = (*list)[i];
    const auto path = element_path(list_path, i);
    if (item.is_number_integer()) {
      if (const auto status = read_integer(item, path, 100, 599, reader.problems())) {
        retry.on_statuses.push_back(static_cast<int>(*status));
      }
      continue;
    }
    const auto word = item.is_string() ? item.get<std::string>() : std::string();
    if (word == "connect_error") {
      retry.on_connect_error = true;
    } else if (word == "reset") {
      retry.on_reset = true;
    } else if (word == "timeout") {
      retry.on_timeout = true;
    } else {
      reader.problems().add(
          path, "must be \"connect_error\", \"reset\", \"timeout\" or a status (100-599)");
    }
  }
}

}  // namespace

HealthCheckConfig parse_health_check(ObjectReader& reader) {
  HealthCheckConfig check;
  if (auto type = reader.string("type")) {
    if (*type == "grpc") {
      check.type = HealthCheckConfig::Type::kGrpc;
    } else if (*type != "http") {
      reader.report("type", R"(must be "http" or "grpc")");
    }
  }
  if (auto service = reader.string("service")) {
    if (check.type != HealthCheckConfig::Type::kGrpc) {
      reader.report("service", R"(is for "type": "grpc")");
    } else if (!std::all_of(service->begin(), service->end(),
                            [](char c) { return c > ' ' && c < 127; })) {
      reader.report("service", "must be printable ASCII without spaces");
    } else {
      check.service = std::move(*service);
    }
  }
  if (auto path = reader.string("path")) {
    if (is_check_path(*path)) {
      check.path = std::move(*path);
    } else {
      reader.report("path", "must start with \"/\" and hold printable ASCII without spaces");
    }
  }
  check.interval = reader.duration_ms("interval_ms", 100, 3600000).value_or(check.interval);
  check.timeout = reader.duration_ms("timeout_ms", 1, 600000).value_or(check.timeout);
  check.healthy_threshold =
      reader.integer<std::uint32_t>("healthy_threshold", 1, 100).value_or(check.healthy_threshold);
  check.unhealthy_threshold = reader.integer<std::uint32_t>("unhealthy_threshold", 1, 100)
                                  .value_or(check.unhealthy_threshold);
  check.expected_statuses =
      parse_statuses(reader, "expected_statuses", std::move(check.expected_statuses));
  if (check.expected_statuses.empty()) {
    reader.report("expected_statuses", "must list at least one status");
  }
  if (check.timeout > check.interval) {
    reader.report("timeout_ms", "must not exceed interval_ms");
  }
  if (check.type == HealthCheckConfig::Type::kGrpc) {
    for (const std::string_view key : {"path", "expected_statuses"}) {
      if (reader.has(key)) {
        reader.report(key, R"(is for "type": "http" (gRPC checks ask Health/Check))");
      }
    }
  }
  return check;
}

OutlierConfig parse_outlier(ObjectReader& reader) {
  OutlierConfig outlier;
  outlier.consecutive_failures = reader.integer<std::uint32_t>("consecutive_failures", 1, 1000)
                                     .value_or(outlier.consecutive_failures);
  outlier.base_ejection =
      reader.duration_ms("base_ejection_ms", 1, 3600000).value_or(outlier.base_ejection);
  outlier.max_ejection_percent = reader.integer<std::uint32_t>("max_ejection_percent", 0, 100)
                                     .value_or(outlier.max_ejection_percent);
  return outlier;
}

RetryConfig parse_retry(ObjectReader& reader) {
  RetryConfig retry;
  retry.attempts = reader.integer<std::uint32_t>("attempts", 1, 5).value_or(retry.attempts);
  parse_retry_on(reader, retry);
  retry.backoff = reader.duration_ms("backoff_ms", 0, 10000).value_or(retry.backoff);
  retry.budget_percent =
      reader.integer<std::uint32_t>("budget_percent", 0, 100).value_or(retry.budget_percent);
  retry.min_retry_concurrency = reader.integer<std::uint32_t>("min_retry_concurrency", 0, 100000)
                                    .value_or(retry.min_retry_concurrency);
  retry.non_idempotent = reader.boolean("non_idempotent").value_or(retry.non_idempotent);
  return retry;
}

}  // namespace sluice::config::detail
