// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/fault_state.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gateway/demo/decimal.hpp"

namespace sluice::demo {
namespace {

constexpr std::string_view kHealth = "health";
constexpr std::string_view kFailPercent = "fail_percent";
constexpr std::string_view kFailStatus = "fail_status";
constexpr std::string_view kDelayMs = "delay_ms";
constexpr std::string_view kCapacity = "capacity";
constexpr std::string_view kServiceMs = "service_ms";

/// `text` as a whole number in [0, max].
std::optional<std::uint64_t> bounded(std::string_view text, std::uint64_t max) {
  const auto value = parse_decimal(text);
  if (!value || *value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

FaultSettings FaultUpdate::applied_to(FaultSettings settings) const {
  settings.healthy = healthy.value_or(settings.healthy);
  settings.fail_percent = fail_percent.value_or(settings.fail_percent);
  settings.fail_status = fail_status.value_or(settings.fail_status);
  settings.delay = delay.value_or(settings.delay);
  settings.capacity = capacity.value_or(settings.capacity);
  settings.service = service.value_or(settings.service);
  return settings;
}

ParameterError set_parameter(FaultUpdate& update, std::string_view name, std::string_view value) {
  if (name == kHealth) {
    if (value != "up" && value != "down") {
      return ParameterError::kBadValue;
    }
    update.healthy = value == "up";
  } else if (name == kFailPercent) {
    const auto percent = bounded(value, kMaxFailPercent);
    if (!percent) {
      return ParameterError::kBadValue;
    }
    update.fail_percent = static_cast<unsigned>(*percent);
  } else if (name == kFailStatus) {
    if (value != "503" && value != "reset") {
      return ParameterError::kBadValue;
    }
    update.fail_status = value == "503" ? FailStatus::k503 : FailStatus::kReset;
  } else if (name == kDelayMs) {
    const auto ms = bounded(value, static_cast<std::uint64_t>(kMaxDelay.count()));
    if (!ms) {
      return ParameterError::kBadValue;
    }
    update.delay = std::chrono::milliseconds(*ms);
  } else if (name == kCapacity) {
    const auto slots = bounded(value, kMaxCapacity);
    if (!slots) {
      return ParameterError::kBadValue;
    }
    update.capacity = static_cast<unsigned>(*slots);
  } else if (name == kServiceMs) {
    const auto ms = bounded(value, static_cast<std::uint64_t>(kMaxServiceTime.count()));
    if (!ms) {
      return ParameterError::kBadValue;
    }
    update.service = std::chrono::milliseconds(*ms);
  } else {
    return ParameterError::kUnknown;
  }
  return ParameterError::kNone;
}

std::string_view expected_values(std::string_view name) {
  if (name == kHealth) {
    return "up or down";
  }
  if (name == kFailPercent) {
    return "between 0 and 100";
  }
  if (name == kFailStatus) {
    return "503 or reset";
  }
  if (name == kDelayMs) {
    static_assert(kMaxDelay.count() == 600000);
    return "between 0 and 600000";
  }
  if (name == kCapacity) {
    static_assert(kMaxCapacity == 100000);
    return "between 0 and 100000";
  }
  if (name == kServiceMs) {
    static_assert(kMaxServiceTime.count() == 600000);
    return "between 0 and 600000";
  }
  return "";
}

ControlQuery parse_control_query(std::string_view query) {
  ControlQuery parsed;
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.empty()) {
      continue;
    }
    const auto eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (const auto error = set_parameter(parsed.update, name, value);
        error != ParameterError::kNone) {
      return {{}, error, std::string(name)};
    }
  }
  return parsed;
}

std::string settings_json(const FaultSettings& settings, const std::optional<ServiceLoad>& load) {
  nlohmann::ordered_json json = {
      {kHealth, settings.healthy ? "up" : "down"},
      {kFailPercent, settings.fail_percent},
      {kFailStatus, settings.fail_status == FailStatus::k503 ? "503" : "reset"},
      {kDelayMs, settings.delay.count()},
      {kCapacity, settings.capacity},
      {kServiceMs, settings.service.count()}};
  if (load) {
    json["in_service"] = load->in_service;
    json["queued"] = load->queued;
  }
  return json.dump();
}

FaultState::FaultState(const FaultSettings& initial)
    : healthy_(initial.healthy),
      fail_percent_(initial.fail_percent),
      fail_status_(initial.fail_status),
      delay_ms_(initial.delay.count()),
      service_ms_(initial.service.count()),
      capacity_(initial.capacity) {}

FaultSettings FaultState::settings() const {
  return {healthy_.load(kOrder),     fail_percent_.load(kOrder),
          fail_status_.load(kOrder), delay(),
          capacity_.capacity(),      service_time()};
}

void FaultState::apply(const FaultUpdate& update) {
  if (update.healthy) {
    healthy_.store(*update.healthy, kOrder);
  }
  if (update.fail_status) {
    fail_status_.store(*update.fail_status, kOrder);
  }
  if (update.delay) {
    delay_ms_.store(update.delay->count(), kOrder);
  }
  if (update.service) {
    service_ms_.store(update.service->count(), kOrder);
  }
  if (update.capacity) {
    capacity_.set_capacity(*update.capacity);
  }
  if (update.fail_percent) {
    requests_.store(0, kOrder);
    fail_percent_.store(*update.fail_percent, kOrder);
  }
}

std::optional<FailStatus> FaultState::next_failure() noexcept {
  const unsigned percent = fail_percent_.load(kOrder);
  if (percent == 0) {
    return std::nullopt;  // the common case stays off the shared counter's cache line
  }
  if (!fails_at(requests_.fetch_add(1, kOrder), percent)) {
    return std::nullopt;
  }
  return fail_status_.load(kOrder);
}

}  // namespace sluice::demo
