// SPDX-License-Identifier: Apache-2.0
#pragma once

// What verifies credentials at this moment (docs/identity.md): the JWT verifier with its key
// set and the API key table. One slot shared by every worker, replaced whole when the config,
// the key set or the keys change; each worker keeps its own copy and its own token cache.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "gateway/auth/api_key_table.hpp"
#include "gateway/auth/jwt_verifier.hpp"
#include "gateway/auth/token_cache.hpp"
#include "gateway/core/shared_slot.hpp"

namespace sluice::auth {

/// The verifiers in force. A null member: that kind of credential is not configured (or its
/// keys could not be read yet), so every such credential is refused as `unknown_key`.
struct CredentialSet {
  std::shared_ptr<const JwtVerifier> jwt;
  std::shared_ptr<const ApiKeyTable> api_keys;
};

/// The current CredentialSet and a generation that grows with each change. Thread-safe.
class CredentialSlot {
 public:
  CredentialSlot();

  [[nodiscard]] std::shared_ptr<const CredentialSet> load() const { return slot_.load(); }
  [[nodiscard]] std::uint64_t generation() const noexcept {
    return generation_.load(std::memory_order_acquire);
  }
  /// Replaces the JWT verifier (the config changed, or its key set was refreshed).
  void set_jwt(std::shared_ptr<const JwtVerifier> jwt);
  /// Replaces the API key table.
  void set_api_keys(std::shared_ptr<const ApiKeyTable> keys);

  /// A token named a `kid` the key set lacks: asks the key-set refresher, if one listens, to
  /// fetch it again (it decides how often it does). Any thread; never blocks.
  void unknown_key_seen() const noexcept { unknown_key_.store(true, std::memory_order_relaxed); }
  /// Whether unknown_key_seen() was called since the last take (then cleared).
  [[nodiscard]] bool take_unknown_key() const noexcept {
    return unknown_key_.exchange(false, std::memory_order_relaxed);
  }

 private:
  void publish(std::shared_ptr<const CredentialSet> next);

  std::mutex write_mutex_;  // one change at a time: set_jwt and set_api_keys each copy the rest
  core::SharedSlot<CredentialSet> slot_;
  std::atomic<std::uint64_t> generation_{0};
  mutable std::atomic<bool> unknown_key_{false};
};

/// One worker's view: the set it last loaded and its token cache, emptied when the set changes
/// (a key removed from the set must stop verifying at once). Confined to the worker's thread.
class WorkerCredentials {
 public:
  explicit WorkerCredentials(const CredentialSlot& slot, TokenCacheLimits limits = {});

  /// The set in force (one atomic load when it did not change).
  [[nodiscard]] const CredentialSet& current();
  [[nodiscard]] TokenCache& tokens() noexcept { return tokens_; }
  [[nodiscard]] const CredentialSlot& slot() const noexcept { return slot_; }

 private:
  const CredentialSlot& slot_;
  std::uint64_t generation_ = ~std::uint64_t{0};
  std::shared_ptr<const CredentialSet> set_;
  TokenCache tokens_;
};

}  // namespace sluice::auth
