// SPDX-License-Identifier: Apache-2.0
#include "gateway/breaker/breaker_registry.hpp"

namespace sluice::breaker {

std::shared_ptr<AdaptiveBreaker> BreakerRegistry::sync(std::string_view backend,
                                                       const BreakerParams& params) {
  std::lock_guard lock(mutex_);
  const auto it = breakers_.find(backend);
  if (it != breakers_.end()) {
    if (!(it->second->params() == params)) {
      it->second->retune(params);
    }
    return it->second;
  }
  auto breaker = AdaptiveBreaker::create(clock_, random_, params);
  breakers_.emplace(std::string(backend), breaker);
  return breaker;
}

std::shared_ptr<ConcurrencyLimit> BreakerRegistry::sync_concurrency(
    std::string_view backend, const std::optional<ConcurrencyParams>& params) {
  std::lock_guard lock(mutex_);
  const auto it = limits_.find(backend);
  if (!params) {
    if (it != limits_.end()) {
      limits_.erase(it);
    }
    return nullptr;
  }
  if (it != limits_.end()) {
    if (!(it->second->params() == *params)) {
      it->second->retune(*params);
    }
    return it->second;
  }
  auto limit = ConcurrencyLimit::create(clock_, *params);
  limits_.emplace(std::string(backend), limit);
  return limit;
}

void BreakerRegistry::retain(const std::set<std::string, std::less<>>& keep) {
  std::lock_guard lock(mutex_);
  std::erase_if(breakers_, [&](const auto& entry) { return !keep.contains(entry.first); });
  std::erase_if(limits_, [&](const auto& entry) { return !keep.contains(entry.first); });
}

std::shared_ptr<ConcurrencyLimit> BreakerRegistry::find_concurrency(
    std::string_view backend) const {
  std::lock_guard lock(mutex_);
  const auto it = limits_.find(backend);
  return it != limits_.end() ? it->second : nullptr;
}

std::vector<std::pair<std::string, std::shared_ptr<ConcurrencyLimit>>>
BreakerRegistry::all_concurrency() const {
  std::lock_guard lock(mutex_);
  return {limits_.begin(), limits_.end()};
}

std::shared_ptr<AdaptiveBreaker> BreakerRegistry::find(std::string_view backend) const {
  std::lock_guard lock(mutex_);
  const auto it = breakers_.find(backend);
  return it != breakers_.end() ? it->second : nullptr;
}

std::vector<std::pair<std::string, std::shared_ptr<AdaptiveBreaker>>> BreakerRegistry::all() const {
  std::lock_guard lock(mutex_);
  return {breakers_.begin(), breakers_.end()};
}

}  // namespace sluice::breaker
