// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/session/connection_gate.hpp"

namespace sluice::proxy {

bool ConnectionGate::try_reserve() noexcept {
  std::uint32_t current = active_.load(std::memory_order_relaxed);
  while (current < max_.load(std::memory_order_relaxed)) {
    if (active_.compare_exchange_weak(current, current + 1, std::memory_order_acq_rel)) {
      return true;
    }
  }
  return false;
}

void ConnectionGate::release() {
  const std::uint32_t before = active_.fetch_sub(1, std::memory_order_acq_rel);
  if (before >= max_.load(std::memory_order_relaxed)) {
    wake_all();
  }
}

void ConnectionGate::set_max(std::uint32_t max) {
  const std::uint32_t before = max_.exchange(max, std::memory_order_relaxed);
  if (max > before) {
    wake_all();
  }
}

void ConnectionGate::on_slot_freed(std::function<void()> wake) {
  std::lock_guard lock(wakers_mutex_);
  wakers_.push_back(std::move(wake));
}

void ConnectionGate::clear_wakers() {
  std::lock_guard lock(wakers_mutex_);
  wakers_.clear();
}

void ConnectionGate::wake_all() {
  std::lock_guard lock(wakers_mutex_);
  for (const auto& wake : wakers_) {
    wake();
  }
}

}  // namespace sluice::proxy
