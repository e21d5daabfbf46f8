// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/balancer.hpp"

#include <utility>

namespace sluice::proxy {

std::uint64_t BalanceCursor::random() noexcept {
  // splitmix64: cheap and well spread; balancing needs no stronger randomness.
  std::uint64_t z = (random_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

Balancer::Balancer(config::Balance policy, std::size_t endpoints)
    : policy_(policy),
      size_(endpoints),
      loads_(std::make_unique<Load[]>(endpoints)) {}  // NOLINT(modernize-avoid-c-arrays): atomics
                                                      // cannot move, so no vector

std::size_t Balancer::pick(BalanceCursor& cursor, std::size_t avoid) const noexcept {
  const std::size_t n = size_;
  if (n <= 1) {
    return 0;
  }
  // With an endpoint to avoid, choose among the other n - 1 and map past it.
  const bool skip = avoid < n;
  const std::size_t choices = skip ? n - 1 : n;
  const auto map = [&](std::size_t i) { return skip && i >= avoid ? i + 1 : i; };
  if (choices == 1) {
    return map(0);
  }
  switch (policy_) {
    case config::Balance::kRoundRobin:
      return map(cursor.next++ % choices);
    case config::Balance::kRandom:
      return map(cursor.random() % choices);
    case config::Balance::kLeastRequest: {
      // Power of two choices (Mitzenmacher): two distinct random candidates, fewer in flight.
      const std::size_t a = cursor.random() % choices;
      std::size_t b = cursor.random() % (choices - 1);
      b = b >= a ? b + 1 : b;
      const std::size_t ea = map(a);
      const std::size_t eb = map(b);
      return in_flight(eb) < in_flight(ea) ? eb : ea;
    }
  }
  return 0;
}

Balancer::InFlight::InFlight(const Balancer* balancer, std::size_t endpoint) noexcept
    : balancer_(balancer), endpoint_(endpoint) {
  balancer_->loads_[endpoint_].value.fetch_add(1, std::memory_order_relaxed);
}

Balancer::InFlight::InFlight(InFlight&& other) noexcept
    : balancer_(std::exchange(other.balancer_, nullptr)), endpoint_(other.endpoint_) {}

Balancer::InFlight& Balancer::InFlight::operator=(InFlight&& other) noexcept {
  if (this != &other) {
    release();
    balancer_ = std::exchange(other.balancer_, nullptr);
    endpoint_ = other.endpoint_;
  }
  return *this;
}

Balancer::InFlight::~InFlight() {
  release();
}

void Balancer::InFlight::release() noexcept {
  if (balancer_ != nullptr) {
    balancer_->loads_[endpoint_].value.fetch_sub(1, std::memory_order_relaxed);
    balancer_ = nullptr;
  }
}

}  // namespace sluice::proxy
