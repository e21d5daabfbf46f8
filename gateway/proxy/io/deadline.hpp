// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/intrusive/list.hpp>
#include <chrono>
#include <cstddef>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/io/net.hpp"

namespace sluice::proxy {

class DeadlineSweep;

/// A point in time by which one I/O phase of one stream must finish (the wait for a request
/// head, a read from an upstream, a write to a slow client). Arming it costs two stores: no
/// timer is scheduled per I/O. The worker's DeadlineSweep checks every armed deadline once per
/// tick and, for one whose time has passed, marks it expired and calls `expire(target)`, which
/// cancels the stream's pending operations; the coroutine then sees its operation fail and asks
/// expired() whether the reason was time (docs/architecture.md, "Timeouts").
///
/// Linked into its sweep for its whole life (unlinked by its destructor). Confined to the
/// worker's thread; the sweep must outlive it, and `target` must outlive every arm().
class Deadline : public boost::intrusive::list_base_hook<
                     boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  using Expire = void (*)(void* target) noexcept;

  Deadline(DeadlineSweep& sweep, Expire expire, void* target) noexcept;
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  /// Armed until `at` (a new arm() replaces the previous one and clears expired()).
  void arm(core::TimePoint at) noexcept {
    at_ = at;
    armed_ = true;
    expired_ = false;
  }
  void disarm() noexcept { armed_ = false; }
  [[nodiscard]] bool armed() const noexcept { return armed_; }
  /// True when the sweep found the last arm() past its time before disarm().
  [[nodiscard]] bool expired() const noexcept { return expired_; }

 private:
  friend class DeadlineSweep;
  void fire() noexcept {
    armed_ = false;
    expired_ = true;
    expire_(target_);
  }

  Expire expire_;
  void* target_;
  core::TimePoint at_{};
  bool armed_ = false;
  bool expired_ = false;
};

/// The worker's clock hand: one timer that ticks every `tick` and fires the deadlines whose time
/// has come, so a deadline fires at most one tick late. The tick is an eighth of the smallest
/// timeout the configuration uses, between 5 ms and 250 ms (tick_for()). Confined to the
/// worker's thread; the clock outlives it.
class DeadlineSweep {
 public:
  DeadlineSweep(const Executor& executor, const core::Clock& clock);
  DeadlineSweep(const DeadlineSweep&) = delete;
  DeadlineSweep& operator=(const DeadlineSweep&) = delete;
  ~DeadlineSweep();

  /// Starts ticking (again) every `tick`.
  void start(core::Duration tick);
  void set_tick(core::Duration tick) noexcept { tick_ = tick; }
  [[nodiscard]] core::Duration tick() const noexcept { return tick_; }
  void stop();
  /// Fires every armed deadline due at `now` (the timer calls this; tests may too). Returns how
  /// many fired.
  std::size_t sweep(core::TimePoint now);
  [[nodiscard]] const core::Clock& clock() const noexcept { return clock_; }
  /// Registered deadlines (armed or not).
  [[nodiscard]] std::size_t size() const noexcept { return deadlines_.size(); }

  /// An eighth of `smallest_timeout`, within [5 ms, 250 ms].
  [[nodiscard]] static core::Duration tick_for(core::Duration smallest_timeout) noexcept;

 private:
  friend class Deadline;
  void schedule();

  using List = boost::intrusive::list<Deadline, boost::intrusive::constant_time_size<false>>;
  const core::Clock& clock_;
  net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>,
                            Executor>
      timer_;
  core::Duration tick_{std::chrono::milliseconds(100)};
  List deadlines_;
  bool running_ = false;
};

inline Deadline::Deadline(DeadlineSweep& sweep, Expire expire, void* target) noexcept
    : expire_(expire), target_(target) {
  sweep.deadlines_.push_back(*this);
}

}  // namespace sluice::proxy
