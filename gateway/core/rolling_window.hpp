// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cassert>
#include <cstdint>
#include <span>
#include <vector>

#include "gateway/core/clock.hpp"

namespace sluice::core {

// The ring-array sliding window (docs/architecture.md "The rolling window"; go-zero's
// RollingWindow): N buckets of width W in a fixed ring, a cursor on the newest ("head") bucket, and
// a running total. Buckets sit on one global grid (multiples of W since the clock's epoch), so all
// windows of one width agree on bucket boundaries. Stale buckets are cleared lazily, however far
// time moved. Bucket requirements: regular, `Bucket{}` is the empty bucket, and `+=`/`-=` with a
// Bucket.

/// The cursor and running total of one ring. Plain data, so rings can live inline in compact
/// records (the limiter's per-key entries); RingRef gives it behaviour.
template <typename Bucket>
struct RingState {
  std::int64_t head_start = 0;  ///< Start of the head bucket, in Duration ticks since the epoch.
  std::uint32_t head = 0;       ///< Slot index of the head bucket.
  Bucket total{};               ///< Sum of every slot.
};

/// The ring algorithm over storage the caller owns: `slots.size()` buckets of `width`. Cheap to
/// construct per operation. Not thread-safe; the owner of the storage serialises access. The
/// referenced state and slots must outlive the RingRef.
template <typename Bucket>
class RingRef {
 public:
  RingRef(RingState<Bucket>& state, std::span<Bucket> slots, Duration width) noexcept
      : state_(state), slots_(slots), width_(width.count()) {
    assert(!slots.empty() && width > Duration::zero());
  }

  /// Empties the ring and puts the head on the bucket covering `now`.
  void reset(TimePoint now) noexcept {
    for (auto& slot : slots_) {
      slot = Bucket{};
    }
    state_.total = Bucket{};
    state_.head = 0;
    const std::int64_t t = now.time_since_epoch().count();
    state_.head_start = t - floor_mod(t, width_);
  }

  /// Moves the head to the bucket covering `now`, clearing every bucket that time skipped (all
  /// of them after a jump of N buckets or more). A `now` before the head bucket's start (a
  /// clock sample taken before another thread advanced the ring) counts as the head bucket.
  void advance(TimePoint now) noexcept {
    const std::int64_t elapsed = now.time_since_epoch().count() - state_.head_start;
    if (elapsed < width_) {
      return;  // the common case: still inside the head bucket
    }
    const std::int64_t steps = elapsed / width_;
    const auto n = static_cast<std::int64_t>(slots_.size());
    if (steps >= n) {
      for (auto& slot : slots_) {
        slot = Bucket{};
      }
      state_.total = Bucket{};
      state_.head = static_cast<std::uint32_t>((state_.head + steps) % n);
    } else {
      for (std::int64_t i = 0; i < steps; ++i) {
        state_.head = state_.head + 1 == slots_.size() ? 0 : state_.head + 1;
        state_.total -= slots_[state_.head];
        slots_[state_.head] = Bucket{};
      }
    }
    state_.head_start += steps * width_;  // stays on the grid
  }

  /// Adds to the head bucket (call advance() first to make it the bucket covering now).
  void add(const Bucket& delta) noexcept {
    slots_[state_.head] += delta;
    state_.total += delta;
  }

  /// Sum of all N buckets, the still-filling head included.
  [[nodiscard]] const Bucket& total() const noexcept { return state_.total; }
  /// Sum of the N-1 complete buckets, without the still-filling head.
  [[nodiscard]] Bucket total_completed() const noexcept {
    Bucket sum = state_.total;
    sum -= slots_[state_.head];
    return sum;
  }
  [[nodiscard]] const Bucket& head_bucket() const noexcept { return slots_[state_.head]; }
  [[nodiscard]] TimePoint head_start() const noexcept {
    return TimePoint(Duration(state_.head_start));
  }
  [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
  [[nodiscard]] Duration width() const noexcept { return Duration(width_); }
  /// When the whole window ends: the head bucket's end.
  [[nodiscard]] TimePoint end() const noexcept { return head_start() + width(); }

  /// Bucket `i` counted from the oldest (0) to the head (N-1).
  [[nodiscard]] const Bucket& from_oldest(std::size_t i) const noexcept {
    return slots_[slot_from_oldest(i)];
  }
  /// Start time of bucket `i` counted from the oldest.
  [[nodiscard]] TimePoint start_from_oldest(std::size_t i) const noexcept {
    const auto back = static_cast<std::int64_t>(slots_.size() - 1 - i);
    return TimePoint(Duration(state_.head_start - back * width_));
  }
  /// Index (counted from the oldest) of the first bucket, oldest to newest, for which
  /// `pred(bucket)` is true; size() if none. `pred` may keep state (e.g. a running sum).
  template <typename Pred>
  [[nodiscard]] std::size_t find_from_oldest(Pred&& pred) const {
    const std::size_t n = slots_.size();
    const std::size_t first = state_.head + 1 == n ? 0 : state_.head + 1;
    for (std::size_t slot = first; slot < n; ++slot) {  // two straight runs: no modulo per step
      if (pred(slots_[slot])) {
        return slot - first;
      }
    }
    for (std::size_t slot = 0; slot < first; ++slot) {
      if (pred(slots_[slot])) {
        return n - first + slot;
      }
    }
    return n;
  }
  /// Replaces bucket `i` (from the oldest), keeping the total exact.
  void set_from_oldest(std::size_t i, const Bucket& value) noexcept {
    Bucket& slot = slots_[slot_from_oldest(i)];
    state_.total -= slot;
    slot = value;
    state_.total += value;
  }

 private:
  static std::int64_t floor_mod(std::int64_t a, std::int64_t b) noexcept {
    const std::int64_t r = a % b;
    return r < 0 ? r + b : r;
  }
  [[nodiscard]] std::size_t slot_from_oldest(std::size_t i) const noexcept {
    return (state_.head + 1 + i) % slots_.size();
  }

  RingState<Bucket>& state_;
  std::span<Bucket> slots_;
  std::int64_t width_;
};

/// A rolling window that owns its ring and reads its own clock: N buckets of width W over the
/// recent past. Not thread-safe: the owner (a breaker, a metrics series) serialises access. The
/// clock must outlive the window.
template <typename Bucket>
class RollingWindow {
 public:
  RollingWindow(const Clock& clock, std::size_t bucket_count, Duration bucket_width)
      : clock_(clock), slots_(bucket_count), width_(bucket_width) {
    assert(bucket_count > 0 && bucket_width > Duration::zero());
    ring().reset(clock_.now());
  }

  /// Adds to the bucket covering now.
  void add(const Bucket& delta) { advanced().add(delta); }
  /// Sum over the whole window, the still-filling bucket included.
  [[nodiscard]] Bucket total() { return advanced().total(); }
  /// Sum over the complete buckets only (go-zero's `ignoreCurrent`).
  [[nodiscard]] Bucket total_completed() { return advanced().total_completed(); }
  /// The ring advanced to `now` (default: the clock's), for callers that need the buckets or
  /// already hold a timestamp.
  [[nodiscard]] RingRef<Bucket> advanced() { return advanced(clock_.now()); }
  [[nodiscard]] RingRef<Bucket> advanced(TimePoint now) {
    auto r = ring();
    r.advance(now);
    return r;
  }

  /// Changes the geometry. Whatever the window holds now carries over into the new window's
  /// current bucket, so no count is lost or invented (it then ages out over one new window).
  void reshape(std::size_t bucket_count, Duration bucket_width) {
    assert(bucket_count > 0 && bucket_width > Duration::zero());
    const Bucket carried = total();
    slots_.assign(bucket_count, Bucket{});
    width_ = bucket_width;
    auto r = ring();
    r.reset(clock_.now());
    r.add(carried);
  }

  [[nodiscard]] std::size_t bucket_count() const noexcept { return slots_.size(); }
  [[nodiscard]] Duration bucket_width() const noexcept { return width_; }

 private:
  RingRef<Bucket> ring() noexcept { return RingRef<Bucket>(state_, slots_, width_); }

  const Clock& clock_;
  std::vector<Bucket> slots_;
  Duration width_;
  RingState<Bucket> state_;
};

}  // namespace sluice::core
