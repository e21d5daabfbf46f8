// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/top_users.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <utility>

namespace sluice::insight {
namespace {

constexpr std::size_t kMaxTopUsersShards = 8;

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

TopUsers::TopUsers(const core::Clock& clock, std::chrono::milliseconds window, std::size_t shards)
    : clock_(clock),
      window_(window),
      width_(std::chrono::duration_cast<core::Duration>(window)),
      shard_shift_(64U - static_cast<unsigned>(std::countr_zero(shards))) {
  assert(window.count() > 0 && std::has_single_bit(shards) && shards <= kMaxEntries / 2);
  const std::size_t capacity = kMaxEntries / (2 * shards);  // two windows per shard
  const core::TimePoint origin = clock.now();
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) {
    shards_.push_back(std::make_unique<Shard>(capacity, origin));
  }
}

TopUsers::Shard& TopUsers::shard_of(std::uint64_t user) const noexcept {
  if (shards_.size() == 1) {
    return *shards_.front();
  }
  // The top bits of a multiplicative hash (a constant of MurmurHash3's finalizer): independent
  // of the bits SpaceSaving's index uses, so a shard's users still spread over its index.
  return *shards_[(user * 0xff51afd7ed558ccdULL) >> shard_shift_];
}

void TopUsers::Shard::roll(core::TimePoint now, core::Duration window) noexcept {
  if (now - start < window) {
    return;  // still the current window (or a request that started just before a roll)
  }
  const auto steps = (now - start) / window;
  if (steps == 1) {
    std::swap(previous, current);
    current.clear();
  } else {  // at least one whole window without a request: nothing is left inside
    previous.clear();
    current.clear();
  }
  start += steps * window;  // stays on the grid
}

void TopUsers::count(std::uint64_t user, bool limited, core::TimePoint now) noexcept {
  Shard& shard = shard_of(user);
  const std::lock_guard lock(shard.mutex);
  shard.roll(now, width_);
  shard.current.add(user, limited);
}

TopAnswer TopUsers::top(std::size_t n) const {
  const core::TimePoint now = clock_.now();
  std::vector<TopCandidate> all;
  double bound = 0.0;
  for (const auto& shard : shards_) {
    const std::lock_guard lock(shard->mutex);
    shard->roll(now, width_);
    const double share = previous_share(now, shard->start, width_);
    const SpaceSaving& current = shard->current;
    const SpaceSaving& previous = shard->previous;
    const auto current_min = static_cast<double>(current.min_count());
    const auto previous_min = static_cast<double>(previous.min_count());
    for (const SpaceSaving::Entry& e : current.entries()) {
      const SpaceSaving::Entry* before = previous.find(e.key);
      all.push_back(
          {e.key,
           static_cast<double>(e.count) +
               share * (before != nullptr ? static_cast<double>(before->count) : previous_min),
           static_cast<double>(e.limited) +
               share * (before != nullptr ? static_cast<double>(before->limited) : 0.0)});
    }
    for (const SpaceSaving::Entry& e : previous.entries()) {
      if (current.find(e.key) == nullptr) {
        all.push_back({e.key, current_min + share * static_cast<double>(e.count),
                       share * static_cast<double>(e.limited)});
      }
    }
    bound = std::max(bound, current_min + share * previous_min);
  }
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

TopUsersRegistry::TopUsersRegistry(const core::Clock& clock, std::size_t shards)
    : clock_(clock), shards_(shards) {}

std::size_t TopUsersRegistry::shards_for(std::size_t threads) noexcept {
  return std::min(std::bit_ceil(std::max<std::size_t>(threads, 1)), kMaxTopUsersShards);
}

std::shared_ptr<TopUsers> TopUsersRegistry::sync(const std::string& policy,
                                                 std::chrono::milliseconds window) {
  auto& sketch = sketches_[policy];
  if (!sketch || sketch->window() != window) {
    sketch = std::make_shared<TopUsers>(clock_, window, shards_);
  }
  return sketch;
}

void TopUsersRegistry::remove(std::string_view policy) {
  if (const auto it = sketches_.find(policy); it != sketches_.end()) {
    sketches_.erase(it);
  }
}

std::shared_ptr<const TopUsers> TopUsersRegistry::find(std::string_view policy) const {
  const auto it = sketches_.find(policy);
  return it == sketches_.end() ? nullptr : it->second;
}

}  // namespace sluice::insight
