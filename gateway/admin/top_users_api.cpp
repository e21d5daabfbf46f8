// SPDX-License-Identifier: Apache-2.0
// GET /admin/limits/{policy}/top?n=10[&scope=fleet]: the policy's heavy hitters
// (docs/operating.md "Heavy hitters"), this replica's or the whole fleet's (docs/fleet.md).
#include <algorithm>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_path.hpp"
#include "gateway/admin/admin_replies.hpp"
#include "gateway/insight/fleet_top.hpp"
#include "gateway/log/user_hash.hpp"

namespace sluice::admin {
namespace {

constexpr std::size_t kTopUsersDefault = 10;
constexpr std::size_t kTopUsersMost = 100;

/// `n` of the query: a whole number from 1 to kTopUsersMost, digits only.
std::optional<std::size_t> top_users_n(std::string_view text) {
  std::size_t n = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, n);
  if (text.empty() || ec != std::errc{} || stop != end || n < 1 || n > kTopUsersMost) {
    return std::nullopt;
  }
  return n;
}

/// A publication older than this is a replica that stopped publishing: left out of the merge.
constexpr std::int64_t kStaleTopMs = 10'000;

}  // namespace

Response AdminApi::fleet_top_users(const Call& call, const std::string& policy, std::size_t n) {
  namespace http = boost::beast::http;
  if (!context_.fleet_tops) {
    return reply(call.req, http::status::conflict, {{"error", "the fleet is off (fleet.enabled)"}});
  }
  const auto tops = context_.fleet_tops();
  if (!tops) {
    return reply(call.req, http::status::service_unavailable,
                 {{"error", "fleet_unavailable"}, {"detail", "the fleet's Redis did not answer"}});
  }
  // Wall-clock time: publications are stamped on other hosts.
  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  std::vector<nlohmann::json> published;
  nlohmann::json replicas = nlohmann::json::array();
  nlohmann::json stale = nlohmann::json::array();
  std::int64_t window_ms = context_.current().config().limits.at(policy).window.count();
  bool labels_agree = true;
  for (const auto& [replica, text] : *tops) {
    const auto top = nlohmann::json::parse(text, nullptr, false);
    if (!top.is_object()) {
      continue;
    }
    const std::int64_t age_ms = std::max<std::int64_t>(0, now_ms - top.value("at_ms", now_ms));
    if (age_ms > kStaleTopMs) {
      stale.push_back({{"replica", replica}, {"age_ms", age_ms}});
      continue;
    }
    replicas.push_back({{"replica", replica}, {"age_ms", age_ms}});
    labels_agree = labels_agree && top.value("shared_labels", false);
    if (const auto it = top.find("policies"); it != top.end() && it->contains(policy)) {
      published.push_back((*it)[policy]);
      window_ms = (*it)[policy].value("window_ms", window_ms);
    }
  }
  const insight::FleetTopAnswer answer = insight::merge_published(published, n);
  nlohmann::json users = nlohmann::json::array();
  for (const insight::FleetTopUser& u : answer.users) {
    users.push_back({{"user", u.user}, {"count", u.count}, {"limited", u.limited}});
  }
  nlohmann::json body = {{"policy", policy},
                         {"scope", "fleet"},
                         {"window_ms", window_ms},
                         {"users", std::move(users)},
                         {"error_bound", answer.error_bound},
                         {"tracked", answer.tracked},
                         {"replicas", std::move(replicas)},
                         {"stale", std::move(stale)}};
  if (!labels_agree) {
    body["warning"] =
        "a replica hashes user keys with a key of its own (set access_log.user_hash_key_env to "
        "the same secret on every replica): one user may show under several labels";
  }
  return reply(call.req, http::status::ok, body);
}

Response AdminApi::top_users(const Call& call, const std::string& policy) {
  namespace http = boost::beast::http;
  if (!context_.current().config().limits.contains(policy)) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  if (context_.top_users == nullptr) {
    return reply(call.req, http::status::conflict,
                 {{"error", "top_users is off (admin.top_users)"}});
  }
  std::size_t n = kTopUsersDefault;
  if (const auto text = query_parameter(call.req.target(), "n")) {
    const auto parsed = top_users_n(*text);
    if (!parsed) {
      return field_error(call.req, "must be an integer from 1 to 100", "(query) n");
    }
    n = *parsed;
  }
  if (const auto scope = query_parameter(call.req.target(), "scope"); scope && *scope != "local") {
    if (*scope != "fleet") {
      return field_error(call.req, "must be \"local\" or \"fleet\"", "(query) scope");
    }
    return fleet_top_users(call, policy, n);
  }
  // Every policy of the running config has its sketch (bound on the same thread). The workers'
  // latest decisions first: the answer counts every request decided before it was asked.
  context_.top_users->drain();
  insight::TopUsers* const sketch = context_.top_users->find(policy);
  if (sketch == nullptr) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  const insight::TopAnswer answer = sketch->top(n);
  nlohmann::json users = nlohmann::json::array();
  for (const insight::TopUser& u : answer.users) {
    const auto label = log::user_label(u.user);  // the access log's `user` of this user
    users.push_back({{"user", std::string(label.data(), label.size())},
                     {"count", u.count},
                     {"limited", u.limited}});
  }
  return reply(call.req, http::status::ok,
               {{"policy", policy},
                {"window_ms", sketch->window().count()},
                {"users", std::move(users)},
                {"error_bound", answer.error_bound},
                {"tracked", answer.tracked},
                {"dropped", context_.top_users->dropped()}});
}

}  // namespace sluice::admin
