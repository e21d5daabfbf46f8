// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gateway/config/config.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/health/endpoint_health.hpp"

namespace sluice::proxy {

/// Per-thread balancing state: the round-robin cursor and a random source. Confined to one
/// worker thread (so round robin needs no shared counter).
struct BalanceCursor {
  std::uint64_t next = 0;
  std::uint64_t random_state = 0x853c49e6748fea9bULL;  ///< seeded per worker
  std::uint64_t random() noexcept;
};

/// Chooses an endpoint of one backend among the pickable ones (docs/endpoint-health.md
/// "Balancing"): `round_robin` (per worker thread), `random`, or `least_request`: the power of
/// two choices on in-flight requests, counted across all threads. The choice is made among the
/// pickable endpoints only, so each keeps an equal share when others drop out; when none is
/// pickable, among all (panic, logged once per episode and counted). Thread-safe; the in-flight
/// counts and states live in the backend's EndpointHealth (shared across config versions).
class Balancer {
 public:
  /// `health` has one slot per endpoint of the backend; `backend` names it in the panic log.
  Balancer(config::Balance policy, std::shared_ptr<health::EndpointHealth> health,
           std::string backend);

  /// An endpoint index; `avoid` (if < size) is skipped when another pickable endpoint exists.
  [[nodiscard]] std::size_t pick(BalanceCursor& cursor, std::size_t avoid,
                                 core::TimePoint now) const noexcept;

  /// Counts a request in flight to `endpoint` for as long as it lives.
  class InFlight {
   public:
    InFlight() = default;
    InFlight(const health::EndpointHealth* health, std::size_t endpoint) noexcept;
    InFlight(InFlight&& other) noexcept;
    InFlight& operator=(InFlight&& other) noexcept;
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    ~InFlight();

   private:
    void release() noexcept;
    const health::EndpointHealth* health_ = nullptr;
    std::size_t endpoint_ = 0;
  };
  [[nodiscard]] InFlight track(std::size_t endpoint) const noexcept {
    return {health_.get(), endpoint};
  }
  [[nodiscard]] std::uint32_t in_flight(std::size_t endpoint) const noexcept {
    return health_->in_flight(endpoint);
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] health::EndpointHealth& health() const noexcept { return *health_; }

 private:
  /// The `k`-th of the endpoints `usable` accepts.
  template <typename Usable>
  [[nodiscard]] std::size_t nth(std::size_t k, Usable usable) const noexcept;
  /// One of the `count` endpoints `usable` accepts, by the policy.
  template <typename Usable>
  [[nodiscard]] std::size_t choose(BalanceCursor& cursor, std::size_t count,
                                   Usable usable) const noexcept;
  void enter_panic() const noexcept;

  config::Balance policy_;
  std::shared_ptr<health::EndpointHealth> health_;
  std::string backend_;
  std::size_t size_;
};

}  // namespace sluice::proxy
