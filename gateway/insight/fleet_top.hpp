// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/insight/top_users.hpp"

// A fleet's heavy hitters (docs/fleet.md, "Heavy hitters and events of the whole fleet"): each
// replica publishes its own sketches' answers; `?scope=fleet` merges them as mergeable
// Space-Saving summaries do (Agarwal et al., "Mergeable summaries", 2012): a user's count is
// the sum of its counts where it is published and of the publisher's bound where it is not, so
// every count stays an upper bound and the merged error bound is the sum of the bounds.
namespace sluice::insight {

/// Users each replica publishes per policy (the heaviest of at most TopUsers::kMaxEntries).
inline constexpr std::size_t kPublishedUsers = 256;

/// One policy's answer as a replica publishes it:
/// {"window_ms", "error_bound", "tracked", "truncated", "users": [[label, count, limited], ...]}.
/// `truncated`: the sketch tracked more users than were published.
[[nodiscard]] nlohmann::json published_policy(
    const TopAnswer& answer, std::chrono::milliseconds window,
    const std::function<std::string(std::uint64_t user)>& label);

struct FleetTopUser {
  std::string user;  ///< the access log's label
  std::uint64_t count = 0;
  std::uint64_t limited = 0;
};

struct FleetTopAnswer {
  std::vector<FleetTopUser> users;  ///< heaviest first
  std::uint64_t error_bound = 0;    ///< the sum of the publishers' bounds
  std::size_t tracked = 0;          ///< users tracked, summed over the publishers
  std::size_t merged = 0;           ///< publications merged (malformed ones are skipped)
};

/// The `n` heaviest users over `published` (values of published_policy(), one per replica).
[[nodiscard]] FleetTopAnswer merge_published(const std::vector<nlohmann::json>& published,
                                             std::size_t n);

}  // namespace sluice::insight
