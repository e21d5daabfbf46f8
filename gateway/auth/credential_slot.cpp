// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/credential_slot.hpp"

#include <utility>

namespace sluice::auth {

CredentialSlot::CredentialSlot() : slot_(std::make_shared<const CredentialSet>()) {}

void CredentialSlot::set_jwt(std::shared_ptr<const JwtVerifier> jwt) {
  std::lock_guard lock(write_mutex_);
  auto next = std::make_shared<CredentialSet>(*slot_.load());
  next->jwt = std::move(jwt);
  publish(std::move(next));
}

void CredentialSlot::set_api_keys(std::shared_ptr<const ApiKeyTable> keys) {
  std::lock_guard lock(write_mutex_);
  auto next = std::make_shared<CredentialSet>(*slot_.load());
  next->api_keys = std::move(keys);
  publish(std::move(next));
}

void CredentialSlot::publish(std::shared_ptr<const CredentialSet> next) {
  slot_.store(std::move(next));
  generation_.fetch_add(1, std::memory_order_acq_rel);  // after the store: a reader that sees
                                                        // the new generation loads the new set
}

WorkerCredentials::WorkerCredentials(const CredentialSlot& slot, TokenCacheLimits limits)
    : slot_(slot), tokens_(limits) {}

const CredentialSet& WorkerCredentials::current() {
  const std::uint64_t generation = slot_.generation();
  if (generation != generation_) {
    set_ = slot_.load();
    generation_ = generation;
    tokens_.clear();
  }
  return *set_;
}

}  // namespace sluice::auth
