// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gateway/config/config.hpp"

namespace sluice::proxy {

/// Per-thread balancing state: the round-robin cursor and a random source. Confined to one
/// worker thread (so round robin needs no shared counter).
struct BalanceCursor {
  std::uint64_t next = 0;
  std::uint64_t random_state = 0x853c49e6748fea9bULL;  ///< seeded per worker
  std::uint64_t random() noexcept;
};

/// Chooses an endpoint of one backend (docs/behaviour.md "Upstreams"): `round_robin` (per worker
/// thread), `random`, or `least_request`: the power of two choices on in-flight requests, counted
/// across all threads. Thread-safe; in-flight counts are atomics on separate cache lines.
class Balancer {
 public:
  Balancer(config::Balance policy, std::size_t endpoints);

  /// An endpoint index; `avoid` (if < size) is skipped when another endpoint exists.
  [[nodiscard]] std::size_t pick(BalanceCursor& cursor, std::size_t avoid) const noexcept;

  /// Counts a request in flight to `endpoint` for as long as it lives.
  class InFlight {
   public:
    InFlight() = default;
    InFlight(const Balancer* balancer, std::size_t endpoint) noexcept;
    InFlight(InFlight&& other) noexcept;
    InFlight& operator=(InFlight&& other) noexcept;
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    ~InFlight();

   private:
    void release() noexcept;
    const Balancer* balancer_ = nullptr;
    std::size_t endpoint_ = 0;
  };
  [[nodiscard]] InFlight track(std::size_t endpoint) const noexcept { return {this, endpoint}; }
  [[nodiscard]] std::uint32_t in_flight(std::size_t endpoint) const noexcept {
    return loads_[endpoint].value.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  struct alignas(64) Load {
    mutable std::atomic<std::uint32_t> value{0};
  };
  config::Balance policy_;
  std::size_t size_;
  std::unique_ptr<Load[]> loads_;  // NOLINT(modernize-avoid-c-arrays): sized at run time
};

}  // namespace sluice::proxy
