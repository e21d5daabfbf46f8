// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gateway/core/clock.hpp"

namespace sluice::insight {

/// One limit decision as the heavy-hitter sketches count it (docs/operating.md "Heavy hitters").
struct UserSample {
  std::uint64_t user = 0;    ///< the keyed hash of the user (the access log label's source)
  core::TimePoint at{};      ///< the request's start
  std::uint32_t sketch = 0;  ///< the policy's sketch (TopUsersRegistry::sync)
  bool limited = false;      ///< a 429, or a decision shadow mode let through
};

/// A bounded single-producer, single-consumer queue of UserSamples: how a worker thread hands
/// its decisions to the control thread, which keeps the sketches (decision 0018). A push is a
/// store of the sample and a release store of the head: no lock, no read-modify-write, nothing
/// the consumer can make the worker wait for. A full ring refuses the sample and counts it.
///
/// Thread-safety: push() from one thread (the producer) at a time, drain() from one thread (the
/// consumer) at a time, dropped() from any thread.
class UserSampleRing {
 public:
  /// Precondition: capacity a power of two.
  explicit UserSampleRing(std::size_t capacity);

  /// Producer: queues `sample`; false (and counted in dropped()) when the ring is full.
  bool push(const UserSample& sample) noexcept {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_seen_ > mask_) {
      tail_seen_ = tail_.load(std::memory_order_acquire);  // the consumer's progress, now
      if (head - tail_seen_ > mask_) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
    }
    slots_[head & mask_] = sample;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  /// Consumer: calls `apply(const UserSample&)` for every queued sample, oldest first; returns
  /// how many. Samples pushed while it runs wait for the next drain.
  template <class Apply>
  std::size_t drain(Apply&& apply) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    for (std::uint64_t i = tail; i != head; ++i) {
      apply(static_cast<const UserSample&>(slots_[i & mask_]));
    }
    tail_.store(head, std::memory_order_release);
    return static_cast<std::size_t>(head - tail);
  }

  /// Samples refused because the ring was full, since construction.
  [[nodiscard]] std::uint64_t dropped() const noexcept {
    return dropped_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return mask_ + 1; }

 private:
  std::unique_ptr<UserSample[]> slots_;
  std::uint64_t mask_;
  // The producer's line: its index, its last look at the consumer's, its refusals.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t tail_seen_ = 0;
  std::atomic<std::uint64_t> dropped_{0};
  // The consumer's line.
  alignas(64) std::atomic<std::uint64_t> tail_{0};
};

}  // namespace sluice::insight
