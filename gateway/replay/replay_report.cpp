// SPDX-License-Identifier: Apache-2.0
#include "gateway/replay/replay_report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::replay {
namespace {

using ReportRow = std::vector<std::string>;

/// Rows as an aligned table: the first `left` columns left-aligned, the others right-aligned.
void write_table(const std::vector<ReportRow>& rows, std::size_t left, std::ostream& out) {
  std::vector<std::size_t> widths;
  for (const ReportRow& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const ReportRow& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += c == 0 ? "" : "  ";
      if (c < left) {
        line += fmt::format("{:<{}}", row[c], widths[c]);
      } else {
        line += fmt::format("{:>{}}", row[c], widths[c]);
      }
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out << line << '\n';
  }
}

std::string signed_text(std::int64_t value) {
  return fmt::format("{:+}", value);
}

void write_skipped(const ReplayReport& r, std::ostream& out) {
  out << fmt::format("lines: {} read, {} replayed, {} malformed, {} unrouted then, {} unrouted now",
                     r.lines, r.replayed, r.malformed, r.unrouted_then, r.unrouted_now);
  out << fmt::format("; {} later than the {} ms reorder window\n", r.late, r.reorder_window_ms);
  if (r.untracked_requests > 0) {
    out << fmt::format(
        "{} requests of users beyond the per-user table's cap are in the totals, not in the "
        "user list\n",
        r.untracked_requests);
  }
  for (const OverrideNote& note : r.overrides) {
    if (note.matched) {
      out << fmt::format("overrides.{}: {} key(s) matched to log labels, {} seen in the log\n",
                         note.policy, note.keys, note.seen);
    } else {
      out << fmt::format(
          "overrides.{}: {} key(s) NOT applied: they are raw user keys and the log holds hashed "
          "labels (set the variable access_log.user_hash_key_env names to the log's secret)\n",
          note.policy, note.keys);
    }
  }
}

}  // namespace

void write_text(const ReplayReport& r, std::ostream& out) {
  if (r.first_ts) {
    out << fmt::format("replayed {} requests logged from {} to {}\n\n", r.replayed, *r.first_ts,
                       *r.last_ts);
  } else {
    out << "no request to replay\n\n";
  }
  std::vector<ReportRow> rows{{"policy", "requests", "allowed then", "limited then", "allowed now",
                               "limited now", "delta"}};
  for (const PolicyTotals& p : r.policies) {
    rows.push_back({p.policy, std::to_string(p.requests), std::to_string(p.allowed_then),
                    std::to_string(p.limited_then), std::to_string(p.allowed_now),
                    std::to_string(p.limited_now), signed_text(p.delta())});
  }
  write_table(rows, 1, out);
  out << '\n';
  if (r.top_users.empty()) {
    out << "no user's limited count changed\n\n";
  } else {
    out << "most affected users (delta = limited now - limited then):\n";
    std::vector<ReportRow> users{
        {"user", "policy", "requests", "limited then", "limited now", "delta"}};
    for (const UserChange& u : r.top_users) {
      users.push_back({u.user, u.policy, std::to_string(u.requests), std::to_string(u.limited_then),
                       std::to_string(u.limited_now), signed_text(u.delta())});
    }
    write_table(users, 2, out);
    out << '\n';
  }
  write_skipped(r, out);
}

nlohmann::ordered_json to_json(const ReplayReport& r) {
  nlohmann::ordered_json policies = nlohmann::ordered_json::array();
  for (const PolicyTotals& p : r.policies) {
    policies.push_back({{"policy", p.policy},
                        {"requests", p.requests},
                        {"allowed_then", p.allowed_then},
                        {"limited_then", p.limited_then},
                        {"shadow_limited_then", p.shadow_limited_then},
                        {"allowed_now", p.allowed_now},
                        {"limited_now", p.limited_now},
                        {"shadow_limited_now", p.shadow_limited_now},
                        {"delta", p.delta()}});
  }
  nlohmann::ordered_json users = nlohmann::ordered_json::array();
  for (const UserChange& u : r.top_users) {
    users.push_back({{"user", u.user},
                     {"policy", u.policy},
                     {"requests", u.requests},
                     {"limited_then", u.limited_then},
                     {"limited_now", u.limited_now},
                     {"delta", u.delta()}});
  }
  nlohmann::ordered_json overrides = nlohmann::ordered_json::array();
  for (const OverrideNote& o : r.overrides) {
    overrides.push_back(
        {{"policy", o.policy}, {"keys", o.keys}, {"matched", o.matched}, {"seen", o.seen}});
  }
  const auto ts = [](const std::optional<std::string>& t) {
    return t ? nlohmann::ordered_json(*t) : nlohmann::ordered_json(nullptr);
  };
  return {{"from", ts(r.first_ts)},
          {"to", ts(r.last_ts)},
          {"lines", r.lines},
          {"replayed", r.replayed},
          {"malformed", r.malformed},
          {"slow_parsed", r.slow_parsed},
          {"unrouted_then", r.unrouted_then},
          {"unrouted_now", r.unrouted_now},
          {"late", r.late},
          {"reorder_window_ms", r.reorder_window_ms},
          {"untracked_requests", r.untracked_requests},
          {"policies", std::move(policies)},
          {"top_users", std::move(users)},
          {"overrides", std::move(overrides)}};
}

}  // namespace sluice::replay
