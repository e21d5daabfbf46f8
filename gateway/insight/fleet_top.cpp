// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/fleet_top.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace sluice::insight {
namespace {

/// What one publication says: its users, and the count a user it does not list may have had
/// there (its error bound; past a truncated list, at most the smallest count listed, too).
struct Publication {
  std::vector<FleetTopUser> users;
  std::uint64_t absent = 0;
  std::uint64_t error_bound = 0;
  std::size_t tracked = 0;
};

std::optional<Publication> read_publication(const nlohmann::json& published) {
  if (!published.is_object() || !published.contains("users") || !published["users"].is_array()) {
    return std::nullopt;
  }
  Publication out;
  out.error_bound = published.value("error_bound", std::uint64_t{0});
  out.tracked = published.value("tracked", std::size_t{0});
  std::uint64_t smallest = UINT64_MAX;
  std::unordered_set<std::string> seen;
  for (const auto& entry : published["users"]) {
    if (!entry.is_array() || entry.size() != 3 || !entry[0].is_string() ||
        !entry[1].is_number_unsigned() || !entry[2].is_number_unsigned() ||
        !seen.insert(entry[0].get<std::string>()).second) {
      return std::nullopt;  // not what published_policy() writes
    }
    out.users.push_back({entry[0].get<std::string>(), entry[1].get<std::uint64_t>(),
                         entry[2].get<std::uint64_t>()});
    smallest = std::min(smallest, out.users.back().count);
  }
  out.absent = out.error_bound;
  if (published.value("truncated", false) && !out.users.empty()) {
    out.absent = std::max(out.absent, smallest);
  }
  return out;
}

}  // namespace

nlohmann::json published_policy(const TopAnswer& answer, std::chrono::milliseconds window,
                                const std::function<std::string(std::uint64_t user)>& label) {
  nlohmann::json users = nlohmann::json::array();
  for (const TopUser& user : answer.users) {
    users.push_back(nlohmann::json::array({label(user.user), user.count, user.limited}));
  }
  return {{"window_ms", window.count()},
          {"error_bound", answer.error_bound},
          {"tracked", answer.tracked},
          {"truncated", answer.tracked > answer.users.size()},
          {"users", std::move(users)}};
}

FleetTopAnswer merge_published(const std::vector<nlohmann::json>& published, std::size_t n) {
  std::vector<Publication> publications;
  for (const auto& one : published) {
    if (auto publication = read_publication(one)) {
      publications.push_back(std::move(*publication));
    }
  }
  FleetTopAnswer answer;
  answer.merged = publications.size();
  std::unordered_map<std::string, FleetTopUser> merged;
  std::uint64_t absent_everywhere = 0;
  for (const Publication& publication : publications) {
    answer.error_bound += publication.error_bound;
    answer.tracked += publication.tracked;
    absent_everywhere += publication.absent;
  }
  // Every user starts at the sum of the bounds of publications that do not list it: each
  // publication that lists the user swaps its bound for the count it saw.
  for (const Publication& publication : publications) {
    for (const FleetTopUser& user : publication.users) {
      auto [it, added] =
          merged.try_emplace(user.user, FleetTopUser{user.user, absent_everywhere, 0});
      it->second.count = it->second.count - publication.absent + user.count;
      it->second.limited += user.limited;
    }
  }
  answer.users.reserve(merged.size());
  for (auto& [name, user] : merged) {
    answer.users.push_back(std::move(user));
  }
  const auto heavier = [](const FleetTopUser& a, const FleetTopUser& b) {
    return a.count != b.count ? a.count > b.count : a.user < b.user;
  };
  const std::size_t shown = std::min(n, answer.users.size());
  std::partial_sort(answer.users.begin(), answer.users.begin() + static_cast<std::ptrdiff_t>(shown),
                    answer.users.end(), heavier);
  answer.users.resize(shown);
  return answer;
}

}  // namespace sluice::insight
