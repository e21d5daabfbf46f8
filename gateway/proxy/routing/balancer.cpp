// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/balancer.hpp"

#include <utility>

#include "gateway/log/logging.hpp"

namespace sluice::proxy {

std::uint64_t BalanceCursor::random() noexcept {
  // splitmix64: cheap and well spread; balancing needs no stronger randomness.
  std::uint64_t z = (random_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

Balancer::Balancer(config::Balance policy, std::shared_ptr<health::EndpointHealth> health,
                   std::string backend)
    : policy_(policy),
      health_(std::move(health)),
      backend_(std::move(backend)),
      size_(health_->size()) {}

template <typename Usable>
std::size_t Balancer::nth(std::size_t k, Usable usable) const noexcept {
  for (std::size_t i = 0; i < size_; ++i) {
    if (usable(i) && k-- == 0) {
      return i;
    }
  }
  return 0;  // unreachable while k < the usable count
}

template <typename Usable>
std::size_t Balancer::choose(BalanceCursor& cursor, std::size_t count,
                             Usable usable) const noexcept {
  if (count == 1) {
    return nth(0, usable);
  }
  switch (policy_) {
    case config::Balance::kRoundRobin:
      return nth(cursor.next++ % count, usable);
    case config::Balance::kRandom:
      return nth(cursor.random() % count, usable);
    case config::Balance::kLeastRequest: {
      // Power of two choices (Mitzenmacher): two distinct random candidates, fewer in flight.
      const std::size_t a = cursor.random() % count;
      std::size_t b = cursor.random() % (count - 1);
      b = b >= a ? b + 1 : b;
      const std::size_t ea = nth(a, usable);
      const std::size_t eb = nth(b, usable);
      return in_flight(eb) < in_flight(ea) ? eb : ea;
    }
  }
  return 0;
}

std::size_t Balancer::pick(BalanceCursor& cursor, std::size_t avoid,
                           core::TimePoint now) const noexcept {
  const std::size_t n = size_;
  if (n <= 1) {
    if (n == 1 && health_->any_out() && !health_->pickable(0, now)) {
      enter_panic();  // one endpoint, and it is out: it is all there is
    }
    return 0;
  }
  const bool skip = avoid < n;
  if (!health_->any_out()) {  // every endpoint pickable: the common case, no per-endpoint reads
    return choose(cursor, skip ? n - 1 : n, [&](std::size_t i) { return i != avoid; });
  }
  const auto pickable = [&](std::size_t i) { return i != avoid && health_->pickable(i, now); };
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    count += pickable(i) ? 1 : 0;
  }
  if (count > 0) {
    if (health_->set_panic(false)) {
      log::get("proxy")->warn("backend {}: endpoints pickable again, panic over", backend_);
    }
    return choose(cursor, count, pickable);
  }
  if (skip && health_->pickable(avoid, now)) {
    return avoid;  // the only pickable endpoint is the one to avoid: better than a sick one
  }
  enter_panic();
  return choose(cursor, skip ? n - 1 : n, [&](std::size_t i) { return i != avoid; });
}

void Balancer::enter_panic() const noexcept {
  health_->count_panic();
  if (health_->set_panic(true)) {
    log::get("proxy")->error(
        "backend {}: no endpoint is pickable (unhealthy, ejected or draining); "
        "using all {} (panic)",
        backend_, size_);
  }
}

Balancer::InFlight::InFlight(const health::EndpointHealth* health, std::size_t endpoint) noexcept
    : health_(health), endpoint_(endpoint) {
  health_->add_in_flight(endpoint_);
}

Balancer::InFlight::InFlight(InFlight&& other) noexcept
    : health_(std::exchange(other.health_, nullptr)), endpoint_(other.endpoint_) {}

Balancer::InFlight& Balancer::InFlight::operator=(InFlight&& other) noexcept {
  if (this != &other) {
    release();
    health_ = std::exchange(other.health_, nullptr);
    endpoint_ = other.endpoint_;
  }
  return *this;
}

Balancer::InFlight::~InFlight() {
  release();
}

void Balancer::InFlight::release() noexcept {
  if (health_ != nullptr) {
    health_->remove_in_flight(endpoint_);
    health_ = nullptr;
  }
}

}  // namespace sluice::proxy
