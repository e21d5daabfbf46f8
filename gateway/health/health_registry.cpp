// SPDX-License-Identifier: Apache-2.0
#include "gateway/health/health_registry.hpp"

#include "gateway/config/endpoint.hpp"

namespace sluice::health {
namespace {

bool same_labels(const EndpointHealth& health, const std::vector<std::string>& labels) {
  if (health.size() != labels.size()) {
    return false;
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (health.label(i) != labels[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<std::string> endpoint_labels(const config::BackendConfig& config) {
  std::vector<std::string> labels;
  labels.reserve(config.endpoints.size());
  for (const auto& endpoint : config.endpoints) {
    labels.push_back(config::to_string(endpoint));
  }
  return labels;
}

std::shared_ptr<EndpointHealth> HealthRegistry::sync(std::string_view backend,
                                                     const config::BackendConfig& config) {
  auto labels = endpoint_labels(config);
  std::lock_guard lock(mutex_);
  auto it = health_.find(backend);
  if (it == health_.end() || !same_labels(*it->second, labels)) {
    auto fresh = std::make_shared<EndpointHealth>(std::move(labels));
    if (it != health_.end()) {
      fresh->inherit(*it->second);
      it->second = fresh;
    } else {
      it = health_.emplace(std::string(backend), fresh).first;
    }
  }
  it->second->configure(config.outlier, config.health_check);
  return it->second;
}

void HealthRegistry::retain(const std::set<std::string, std::less<>>& keep) {
  std::lock_guard lock(mutex_);
  std::erase_if(health_, [&](const auto& entry) { return !keep.contains(entry.first); });
}

std::shared_ptr<EndpointHealth> HealthRegistry::find(std::string_view backend) const {
  std::lock_guard lock(mutex_);
  const auto it = health_.find(backend);
  return it == health_.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, std::shared_ptr<EndpointHealth>>> HealthRegistry::all() const {
  std::lock_guard lock(mutex_);
  return {health_.begin(), health_.end()};
}

}  // namespace sluice::health
