// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <optional>
#include <string_view>

#include "gateway/config/auth_config.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/store/memory_store.hpp"

namespace sluice::proxy {

/// `auth.failure_policy` (docs/identity.md "Floods"): the credential failures of each client
/// address in a sliding window, kept by a memory store of its own (local to this replica, never
/// the limits' store), so an address that failed too often is refused before any signature
/// check. Thread-safe: workers count and ask; the control thread configures and sweeps.
class AuthFailureLedger {
 public:
  explicit AuthFailureLedger(const core::Clock& clock);

  /// The policy in force (null: off, nothing counted or refused).
  void configure(const std::optional<config::AuthFailurePolicyConfig>& policy);

  /// Whether `address` has used up its failures: then `retry_after` is when it may try again.
  [[nodiscard]] bool tripped(std::string_view address, core::Duration& retry_after);
  /// Counts one failed credential of `address`.
  void count_failure(std::string_view address);
  /// Forgets addresses with nothing in the window (the gateway's timer).
  void sweep() { store_.sweep_idle(); }

 private:
  static constexpr std::uint64_t kMaxAddresses = 200'000;

  store::MemoryStore store_;
  const store::PolicyId policy_;  ///< applied at construction; configure() updates it in place
  std::atomic<bool> enabled_{false};
};

}  // namespace sluice::proxy
