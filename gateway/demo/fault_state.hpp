// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/demo/service_capacity.hpp"

// The demo backend's switchable sickness (README.md, the demo backend's routes): the
// health /healthz reports, a share of requests that fail, how they fail, a delay, and a
// capacity with a service time (an overloadable server). Set by the command line
// (demo_options) and by `POST /control?...` (demo_routes). No I/O: the session asks
// FaultState what to do and does it.
namespace sluice::demo {

/// How an injected failure answers.
enum class FailStatus {
  k503,    // 503 {"error":"injected_failure"}; the connection stays open
  kReset,  // no response: the connection is reset (RST) once the request has been read
};

inline constexpr unsigned kMaxFailPercent = 100;
/// Longest delay_ms accepted (the same bound as /slow/{ms}).
inline constexpr std::chrono::milliseconds kMaxDelay{600000};
/// Longest service_ms accepted (the same bound).
inline constexpr std::chrono::milliseconds kMaxServiceTime{600000};

/// The fault settings, as /control reports them.
struct FaultSettings {
  bool healthy = true;                        // /healthz: 200 {"status":"up"} or 503 "down"
  unsigned fail_percent = 0;                  // 0..100: share of the other requests that fail
  FailStatus fail_status = FailStatus::k503;  // how those fail
  std::chrono::milliseconds delay{0};         // 0..kMaxDelay before every answer but /control's
  unsigned capacity = 0;                      // 0..kMaxCapacity requests served at once; 0 = all
  std::chrono::milliseconds service{0};       // 0..kMaxServiceTime each holds its slot first

  friend bool operator==(const FaultSettings&, const FaultSettings&) = default;
};

/// The parameters of one `/control` query (or the fault options of one command line): only
/// the settings it names change. (The `{}`s let designated initializers name a subset.)
struct FaultUpdate {
  std::optional<bool> healthy{};
  std::optional<unsigned> fail_percent{};
  std::optional<FailStatus> fail_status{};
  std::optional<std::chrono::milliseconds> delay{};
  std::optional<unsigned> capacity{};
  std::optional<std::chrono::milliseconds> service{};

  /// `settings` with the fields this update names replaced.
  [[nodiscard]] FaultSettings applied_to(FaultSettings settings) const;
};

enum class ParameterError {
  kNone,
  kUnknown,   // no such parameter
  kBadValue,  // a known parameter with a value outside its range (expected_values says what)
};

/// Sets the field of `update` named by the /control parameter `name` (health, fail_percent,
/// fail_status, delay_ms, capacity, service_ms) from `value`. On an error `update` is unchanged.
ParameterError set_parameter(FaultUpdate& update, std::string_view name, std::string_view value);

/// What the parameter `name` accepts, for error messages ("up or down", "between 0 and
/// 100", ...); "" for an unknown name.
[[nodiscard]] std::string_view expected_values(std::string_view name);

/// A parsed `/control` query string: the update, or the first parameter that is unknown or
/// has a bad value (then nothing of the query is to be applied).
struct ControlQuery {
  FaultUpdate update;
  ParameterError error = ParameterError::kNone;
  std::string parameter;  // the offending parameter's name when `error` is set
};

/// Parses `name=value&...` (no leading '?'; no percent-decoding; empty pairs are skipped; a
/// parameter given twice takes its last value; a parameter without '=' has the value "").
[[nodiscard]] ControlQuery parse_control_query(std::string_view query);

/// `{"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0,"capacity":0,
/// "service_ms":0}`; with `load`, its counts follow (`...,"in_service":0,"queued":0}`), as
/// /control answers.
[[nodiscard]] std::string settings_json(const FaultSettings& settings,
                                        const std::optional<ServiceLoad>& load = std::nullopt);

/// True when request number `n` (0-based, counted since fail_percent was last set) fails under
/// `percent`: floor((n+1)·p/100) > floor(n·p/100). So the failures are spread evenly and exactly
/// `percent` of any 100 consecutive requests fail (p=10: the 10th, 20th, ...; p=50: every
/// second; p=100: all). Only n mod 100 matters, so no count overflows.
[[nodiscard]] constexpr bool fails_at(std::uint64_t n, unsigned percent) noexcept {
  const std::uint64_t r = n % 100;
  return (r + 1) * percent / 100 > r * percent / 100;
}

/// The live settings of one backend process, shared by all its threads, the request count
/// the failures are spread over, and the service slots (ServiceCapacity). Thread-safe: every
/// field is its own atomic (relaxed) or, for the capacity, locked, so a reader racing an
/// update may see some of its fields changed and not yet others. Owned by DemoServer, which
/// outlives every session.
class FaultState {
 public:
  explicit FaultState(const FaultSettings& initial = {});
  FaultState(const FaultState&) = delete;
  FaultState& operator=(const FaultState&) = delete;

  [[nodiscard]] FaultSettings settings() const;
  [[nodiscard]] bool is_healthy() const noexcept { return healthy_.load(kOrder); }
  [[nodiscard]] std::chrono::milliseconds delay() const noexcept {
    return std::chrono::milliseconds(delay_ms_.load(kOrder));
  }
  [[nodiscard]] std::chrono::milliseconds service_time() const noexcept {
    return std::chrono::milliseconds(service_ms_.load(kOrder));
  }
  /// The slots of the requests that capacity applies to (all but /healthz, /control and
  /// WebSocket upgrades).
  [[nodiscard]] ServiceCapacity& capacity() noexcept { return capacity_; }

  /// Applies the fields `update` names. Setting fail_percent (even to its current value)
  /// restarts the request count, so the spread starts afresh from that update. A capacity
  /// takes effect for the next slots handed out (ServiceCapacity::set_capacity), a service
  /// time for the requests that get a slot from then on.
  void apply(const FaultUpdate& update);

  /// Counts one request subject to fail_percent (not /healthz, not /control) and says how it
  /// fails, or nullopt when it is answered normally. Counts nothing while fail_percent is 0.
  [[nodiscard]] std::optional<FailStatus> next_failure() noexcept;

 private:
  static constexpr auto kOrder = std::memory_order_relaxed;  // independent flags, no payload

  std::atomic<bool> healthy_;
  std::atomic<unsigned> fail_percent_;
  std::atomic<FailStatus> fail_status_;
  std::atomic<std::chrono::milliseconds::rep> delay_ms_;
  std::atomic<std::uint64_t> requests_{0};  // since fail_percent was last set
  std::atomic<std::chrono::milliseconds::rep> service_ms_;
  ServiceCapacity capacity_;
};

}  // namespace sluice::demo
