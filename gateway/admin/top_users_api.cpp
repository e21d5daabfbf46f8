// SPDX-License-Identifier: Apache-2.0
// GET /admin/limits/{policy}/top?n=10: the policy's heavy hitters (docs/operating.md "Heavy
// hitters").
#include <boost/beast/http.hpp>
#include <charconv>
#include <optional>
#include <string_view>

#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_path.hpp"
#include "gateway/admin/admin_replies.hpp"
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

}  // namespace

Response AdminApi::top_users(const Call& call, const std::string& policy) {
  namespace http = boost::beast::http;
  if (!context_.current().config().limits.contains(policy)) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  if (context_.top_users == nullptr) {
    return reply(call.req, http::status::conflict,
                 {{"error", "top_users is off (admin.top_users)"}});
  }
  // Every policy of the running config has its sketch (bound on the same thread). The workers'
  // latest decisions first: the answer counts every request decided before it was asked.
  context_.top_users->drain();
  insight::TopUsers* const sketch = context_.top_users->find(policy);
  if (sketch == nullptr) {
    return not_found(call.req, "no policy named \"" + policy + "\"");
  }
  std::size_t n = kTopUsersDefault;
  if (const auto text = query_parameter(call.req.target(), "n")) {
    const auto parsed = top_users_n(*text);
    if (!parsed) {
      return field_error(call.req, "must be an integer from 1 to 100", "(query) n");
    }
    n = *parsed;
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
