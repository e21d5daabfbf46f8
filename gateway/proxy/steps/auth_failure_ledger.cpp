// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/auth_failure_ledger.hpp"

namespace sluice::proxy {
namespace {

constexpr std::string_view kPolicyName = "auth_failures";

limiter::Policy ledger_policy(const config::AuthFailurePolicyConfig& c) {
  limiter::Policy policy;
  policy.name = std::string(kPolicyName);
  policy.requests = c.failures;
  policy.window = c.window;
  policy.buckets = c.buckets;
  return policy;
}

}  // namespace

AuthFailureLedger::AuthFailureLedger(const core::Clock& clock)
    : store_(clock, {.max_keys = kMaxAddresses}),
      policy_(store_.apply(ledger_policy(config::AuthFailurePolicyConfig{}))) {}

void AuthFailureLedger::configure(const std::optional<config::AuthFailurePolicyConfig>& policy) {
  if (policy) {
    static_cast<void>(store_.apply(ledger_policy(*policy)));  // the same name: the same id
  }
  enabled_.store(policy.has_value(), std::memory_order_release);
}

bool AuthFailureLedger::tripped(std::string_view address, core::Duration& retry_after) {
  if (!enabled_.load(std::memory_order_acquire)) {
    return false;
  }
  const limiter::KeyState state = store_.inspect_now(policy_, address);
  if (state.remaining > 0) {
    return false;
  }
  retry_after = state.reset;
  return true;
}

void AuthFailureLedger::count_failure(std::string_view address) {
  if (enabled_.load(std::memory_order_acquire)) {
    static_cast<void>(store_.decide_now(policy_, address));
  }
}

}  // namespace sluice::proxy
