// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "gateway/breaker/concurrency_limit.hpp"

namespace sluice::breaker {

/// One adaptive breaker (and, where configured, one adaptive concurrency limit) per backend
/// name, shared by every worker thread and kept across config versions: a reload that keeps a
/// backend retunes them in place, so windows and the learnt limit survive. Thread-safe (a mutex;
/// used when a config is compiled and at scrape time, never per request). The clock and random
/// source must outlive the registry; breakers handed out stay alive while anyone holds them, even
/// after removal.
class BreakerRegistry {
 public:
  BreakerRegistry(const core::Clock& clock, core::Random& random)
      : clock_(clock), random_(random) {}

  /// The breaker of `backend`, created with `params` or retuned to them.
  std::shared_ptr<AdaptiveBreaker> sync(std::string_view backend, const BreakerParams& params);
  /// The concurrency limit of `backend`, created with `params` or retuned to them; null (and
  /// forgotten) when `params` is empty.
  std::shared_ptr<ConcurrencyLimit> sync_concurrency(
      std::string_view backend, const std::optional<ConcurrencyParams>& params);
  /// Forgets the breakers and limits of every backend not in `keep`.
  void retain(const std::set<std::string, std::less<>>& keep);
  /// The breaker of `backend`, or null.
  [[nodiscard]] std::shared_ptr<AdaptiveBreaker> find(std::string_view backend) const;
  /// Every breaker with its backend name, by name.
  [[nodiscard]] std::vector<std::pair<std::string, std::shared_ptr<AdaptiveBreaker>>> all() const;
  /// The concurrency limit of `backend`, or null.
  [[nodiscard]] std::shared_ptr<ConcurrencyLimit> find_concurrency(std::string_view backend) const;
  /// Every concurrency limit with its backend name, by name.
  [[nodiscard]] std::vector<std::pair<std::string, std::shared_ptr<ConcurrencyLimit>>>
  all_concurrency() const;

 private:
  const core::Clock& clock_;
  core::Random& random_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<AdaptiveBreaker>, std::less<>> breakers_;
  std::map<std::string, std::shared_ptr<ConcurrencyLimit>, std::less<>> limits_;
};

}  // namespace sluice::breaker
