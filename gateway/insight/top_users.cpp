// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/top_users.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

namespace sluice::insight {
namespace {

/// One user while an answer is assembled: real-valued estimates, rounded at the end.
struct TopCandidate {
  std::uint64_t user;
  double count;
  double limited;
};

/// The share of the previous window still inside the sliding window that ends at `now`.
double previous_share(core::TimePoint now, core::TimePoint start, core::Duration width) {
  const double elapsed =
      static_cast<double>((now - start).count()) / static_cast<double>(width.count());
  return std::clamp(1.0 - elapsed, 0.0, 1.0);
}

std::uint64_t rounded_estimate(double estimate) {
  return estimate <= 0.0 ? 0 : static_cast<std::uint64_t>(std::llround(estimate));
}

}  // namespace

TopUsers::TopUsers(const core::Clock& clock, std::chrono::milliseconds window)
    : clock_(clock),
      window_(window),
      width_(std::chrono::duration_cast<core::Duration>(window)),
      current_(kMaxEntries / 2),
      previous_(kMaxEntries / 2),
      start_(clock.now()) {
  assert(window.count() > 0);
}

void TopUsers::roll(core::TimePoint now) noexcept {
  if (now - start_ < width_) {
    return;  // still the current window (or a sample from just before a roll)
  }
  const auto steps = (now - start_) / width_;
  if (steps == 1) {
    std::swap(previous_, current_);
    current_.clear();
  } else {  // at least one whole window without a request: nothing is left inside
    previous_.clear();
    current_.clear();
  }
  start_ += steps * width_;  // stays on the grid
}

void TopUsers::count(std::uint64_t user, bool limited, core::TimePoint at) noexcept {
  roll(at);
  current_.add(user, limited);
}

TopAnswer TopUsers::top(std::size_t n) {
  const core::TimePoint now = clock_.now();
  roll(now);
  const double share = previous_share(now, start_, width_);
  const auto current_min = static_cast<double>(current_.min_count());
  const auto previous_min = static_cast<double>(previous_.min_count());
  std::vector<TopCandidate> all;
  all.reserve(current_.entries().size() + previous_.entries().size());
  for (const SpaceSaving::Entry& e : current_.entries()) {
    const SpaceSaving::Entry* before = previous_.find(e.key);
    all.push_back(
        {e.key,
         static_cast<double>(e.count) +
             share * (before != nullptr ? static_cast<double>(before->count) : previous_min),
         static_cast<double>(e.limited) +
             share * (before != nullptr ? static_cast<double>(before->limited) : 0.0)});
  }
  for (const SpaceSaving::Entry& e : previous_.entries()) {
    if (current_.find(e.key) == nullptr) {
      all.push_back({e.key, current_min + share * static_cast<double>(e.count),
                     share * static_cast<double>(e.limited)});
    }
  }
  const double bound = current_min + share * previous_min;
  const std::size_t shown = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(shown), all.end(),
                    [](const TopCandidate& a, const TopCandidate& b) {
                      if (a.count != b.count) {
                        return a.count > b.count;
                      }
                      if (a.limited != b.limited) {
                        return a.limited > b.limited;
                      }
                      return a.user < b.user;
                    });
  TopAnswer answer;
  answer.tracked = all.size();
  answer.error_bound = static_cast<std::uint64_t>(std::ceil(bound));
  answer.users.reserve(shown);
  for (std::size_t i = 0; i < shown; ++i) {
    answer.users.push_back(
        {all[i].user, rounded_estimate(all[i].count), rounded_estimate(all[i].limited)});
  }
  return answer;
}

TopUsersRegistry::TopUsersRegistry(const core::Clock& clock, std::size_t workers) : clock_(clock) {
  rings_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    rings_.push_back(std::make_unique<UserSampleRing>(kRingCapacity));
  }
}

std::uint32_t TopUsersRegistry::sync(const std::string& policy, std::chrono::milliseconds window) {
  auto& sketch = sketches_[policy];
  if (!sketch.users || sketch.users->window() != window) {
    if (sketch.users) {
      by_id_.erase(sketch.id);
    }
    sketch.id = next_id_++;
    sketch.users = std::make_unique<TopUsers>(clock_, window);
    by_id_[sketch.id] = sketch.users.get();
  }
  return sketch.id;
}

void TopUsersRegistry::remove(std::string_view policy) {
  if (const auto it = sketches_.find(policy); it != sketches_.end()) {
    by_id_.erase(it->second.id);
    sketches_.erase(it);
  }
}

std::size_t TopUsersRegistry::drain() {
  // Samples come in runs of one policy: the last lookup usually answers the next.
  std::uint32_t last_id = 0;
  TopUsers* last = nullptr;
  std::size_t drained = 0;
  for (const auto& ring : rings_) {
    drained += ring->drain([&](const UserSample& s) {
      if (s.sketch != last_id) {
        const auto it = by_id_.find(s.sketch);
        last_id = s.sketch;
        last = it == by_id_.end() ? nullptr : it->second;  // a policy removed since
      }
      if (last != nullptr) {
        last->count(s.user, s.limited, s.at);
      }
    });
  }
  return drained;
}

TopUsers* TopUsersRegistry::find(std::string_view policy) {
  const auto it = sketches_.find(policy);
  return it == sketches_.end() ? nullptr : it->second.users.get();
}

std::uint64_t TopUsersRegistry::dropped() const noexcept {
  std::uint64_t sum = 0;
  for (const auto& ring : rings_) {
    sum += ring->dropped();
  }
  return sum;
}

}  // namespace sluice::insight
