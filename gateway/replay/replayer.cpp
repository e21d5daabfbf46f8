// SPDX-License-Identifier: Apache-2.0
#include "gateway/replay/replayer.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "gateway/proxy/routing/snapshot.hpp"
#include "gateway/proxy/steps/identify_step.hpp"

namespace sluice::replay {
namespace {

constexpr std::uint8_t kThenAllowed = 0;
constexpr std::uint8_t kThenLimited = 1;
constexpr std::uint8_t kThenShadowLimited = 2;
constexpr unsigned kLabelBits = 48;  // 12 hex digits
constexpr std::size_t kMaxReplayPolicies = 0xffff;
/// The limiter's clock counts nanoseconds in 64 bits: about 292 years either side of its epoch.
constexpr LogTime kReplayEarliest{};
constexpr LogTime kReplayLatest{std::chrono::sys_days(std::chrono::year(2200) / 1 / 1) -
                                LogTime::duration(1)};

/// The new config's routes, compiled for matching only (no backend, no limit objects).
std::vector<proxy::Route> replay_routes(const config::Config& config) {
  std::vector<proxy::Route> routes;
  routes.reserve(config.routes.size());
  for (const auto& r : config.routes) {
    proxy::Route route;
    route.name = r.name;
    route.prefix = r.prefix;
    if (r.host) {
      route.host = proxy::normalize_host(*r.host);
    }
    route.methods = r.methods;
    route.limit = r.limit;
    routes.push_back(std::move(route));
  }
  return routes;
}

core::TimePoint replay_time(LogTime t) {
  return core::TimePoint{} + std::chrono::duration_cast<core::Duration>(t.time_since_epoch());
}

/// Orders the reorder heap as a min-heap on (time, arrival).
struct LaterFirst {
  template <typename P>
  bool operator()(const P& a, const P& b) const noexcept {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

std::uint64_t user_key(std::uint32_t policy, std::uint64_t label) noexcept {
  return (static_cast<std::uint64_t>(policy) << kLabelBits) | label;
}

}  // namespace

Replayer::Replayer(const config::Config& next, ReplayOptions options)
    : options_(std::move(options)), max_keys_(next.store.max_keys), router_(replay_routes(next)) {
  for (const auto& entry : next.limits) {
    PolicyState state;
    state.totals.policy = entry.first;
    state.policy = proxy::limiter_policy(next, entry.first);
    prepare_overrides(state, options_);
    policies_.push_back(std::move(state));
  }
  PolicyState none;
  none.totals.policy = kNoPolicy;
  policies_.push_back(std::move(none));
  if (policies_.size() > kMaxReplayPolicies) {
    throw std::invalid_argument("replay: more than 65534 policies");
  }
  for (const auto& r : next.routes) {
    std::uint32_t index = none_index();
    if (r.limit) {
      index = static_cast<std::uint32_t>(
          std::distance(next.limits.begin(), next.limits.find(*r.limit)));
    }
    route_policy_.emplace_back(r.name, index);
  }
  counts_.reorder_window_ms = static_cast<std::uint64_t>(options_.reorder_window.count());
}

Replayer::~Replayer() = default;

void Replayer::prepare_overrides(PolicyState& state, const ReplayOptions& options) {
  auto& overrides = state.policy.overrides;
  state.override_keys = overrides.size();
  if (overrides.empty()) {
    return;
  }
  if (!options.user_hash) {
    overrides.clear();  // keyed by raw keys, which the log never shows: nothing could match
    return;
  }
  // The store is keyed by labels here, so key the overrides by the labels of their keys.
  std::map<std::string, std::uint32_t, std::less<>> labelled;
  for (const auto& [key, requests] : overrides) {
    const auto label = proxy::user_label(*options.user_hash, key);
    const std::string_view text(label.data(), label.size());
    labelled.insert_or_assign(std::string(text), requests);
    state.override_labels.push_back(parse_user_label(text).value_or(0));
  }
  overrides = std::move(labelled);
  state.overrides_matched = true;
}

std::optional<std::uint32_t> Replayer::policy_of(const LogLine& line) const {
  for (const auto& [name, index] : route_policy_) {
    if (name == line.route) {
      return index;
    }
  }
  // A route the new config renamed or does not have: route the request as it would now.
  const proxy::RouteMatch match = router_.match(line.host.value_or(""), line.method, line.path);
  if (match.kind != proxy::RouteMatch::Kind::kMatched) {
    return std::nullopt;
  }
  return route_policy_[static_cast<std::size_t>(match.route - router_.routes().data())].second;
}

std::string_view Replayer::add(const LogLine& line) {
  const auto logged = parse_log_time(line.ts);
  if (!logged) {
    return "\"ts\" is not a time like 2026-11-25T02:31:13.952Z";
  }
  std::uint8_t then = kThenAllowed;
  if (line.limit == "limited") {
    then = kThenLimited;
  } else if (line.limit == "shadow_limited") {
    then = kThenShadowLimited;
  } else if (line.limit != "allowed" && line.limit != "none") {
    return "\"limit\" is not allowed, limited, shadow_limited or none";
  }
  if (*logged < kReplayEarliest || *logged > kReplayLatest) {
    return "\"ts\" is outside the years 1970 to 2199";  // beyond the limiter clock's range
  }
  if (line.route == "none") {
    ++counts_.unrouted_then;  // answered before any limit (404, 405, 400)
    return {};
  }
  const auto policy = policy_of(line);
  if (!policy) {
    ++counts_.unrouted_now;
    return {};
  }
  if (!line.user) {
    return "a routed request without a \"user\"";
  }
  const auto label = parse_user_label(*line.user);
  if (!label) {
    return "\"user\" is not a label of 12 hex digits";
  }
  first_ = first_ ? std::min(*first_, *logged) : *logged;
  last_ = last_ ? std::max(*last_, *logged) : *logged;
  core::TimePoint at = replay_time(*logged);
  if (decided_up_to_ && at < *decided_up_to_) {
    ++counts_.late;  // the limiter's time never goes back: decide it at the latest time
    at = *decided_up_to_;
  }
  heap_.push_back(
      Pending{.at = at, .seq = seq_++, .label = *label, .policy = *policy, .then = then});
  std::push_heap(heap_.begin(), heap_.end(), LaterFirst{});
  latest_seen_ = latest_seen_ ? std::max(*latest_seen_, at) : at;
  drain(*latest_seen_ - options_.reorder_window);
  return {};
}

void Replayer::finish() {
  drain(core::TimePoint::max());
}

void Replayer::drain(core::TimePoint up_to) {
  while (!heap_.empty() && heap_.front().at <= up_to) {
    std::pop_heap(heap_.begin(), heap_.end(), LaterFirst{});
    const Pending next = heap_.back();
    heap_.pop_back();
    decide(next);
    decided_up_to_ = next.at;
  }
}

void Replayer::decide(const Pending& pending) {
  clock_.set(pending.at);
  if (!store_) {
    // Made at the first request's time, as the gateway's store is made before its first one.
    store_ = std::make_unique<store::MemoryStore>(
        clock_, store::MemoryStore::Options{.max_keys = max_keys_, .shards = 0});
    for (std::size_t i = 0; i + 1 < policies_.size(); ++i) {
      policies_[i].id = store_->apply(policies_[i].policy);
    }
    last_sweep_ = pending.at;
  } else if (pending.at - last_sweep_ >= store::MemoryStore::kSweepEvery) {
    store_->sweep_idle();  // what the gateway's tick does every 10 s
    last_sweep_ = pending.at;
  }
  PolicyState& state = policies_[pending.policy];
  PolicyTotals& totals = state.totals;
  ++totals.requests;
  ++counts_.replayed;
  if (pending.then == kThenLimited) {
    ++totals.limited_then;
  } else {
    ++totals.allowed_then;
    totals.shadow_limited_then += pending.then == kThenShadowLimited ? 1 : 0;
  }
  bool limited_now = false;
  if (pending.policy != none_index()) {
    const auto label = user_label_text(pending.label);
    const auto decision =
        store_->decide_now(state.id, std::string_view(label.data(), label.size()));
    const limiter::Verdict verdict = limiter::verdict(decision.allowed, state.policy.mode);
    limited_now = limiter::rejects(verdict);
    totals.shadow_limited_now += verdict == limiter::Verdict::kShadowLimited ? 1 : 0;
  }
  ++(limited_now ? totals.limited_now : totals.allowed_now);
  count_user(pending, limited_now);
}

void Replayer::count_user(const Pending& pending, bool limited_now) {
  const std::uint64_t key = user_key(pending.policy, pending.label);
  auto it = users_.find(key);
  if (it == users_.end()) {
    if (users_.size() >= options_.max_tracked_users) {
      ++counts_.untracked_requests;
      return;
    }
    it = users_.emplace(key, UserCounts{}).first;
  }
  ++it->second.requests;
  it->second.limited_then += pending.then == kThenLimited ? 1 : 0;
  it->second.limited_now += limited_now ? 1 : 0;
}

std::vector<UserChange> Replayer::top_users() const {
  using Entry = std::pair<std::uint64_t, UserCounts>;
  std::vector<Entry> changed;
  for (const auto& entry : users_) {
    if (entry.second.limited_then != entry.second.limited_now) {
      changed.emplace_back(entry);
    }
  }
  const auto magnitude = [](const UserCounts& c) {
    return c.limited_now > c.limited_then ? c.limited_now - c.limited_then
                                          : c.limited_then - c.limited_now;
  };
  const std::size_t n = std::min(options_.top_users, changed.size());
  std::partial_sort(changed.begin(), changed.begin() + static_cast<std::ptrdiff_t>(n),
                    changed.end(), [&](const Entry& a, const Entry& b) {
                      const auto ma = magnitude(a.second);
                      const auto mb = magnitude(b.second);
                      if (ma != mb) {
                        return ma > mb;
                      }
                      if (a.second.requests != b.second.requests) {
                        return a.second.requests > b.second.requests;
                      }
                      return a.first < b.first;  // a stable order for equal changes
                    });
  std::vector<UserChange> top;
  top.reserve(n);
  const std::uint64_t label_mask = (std::uint64_t{1} << kLabelBits) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& [key, counts] = changed[i];
    const auto label = user_label_text(key & label_mask);
    top.push_back(UserChange{.user = std::string(label.data(), label.size()),
                             .policy = policies_[key >> kLabelBits].totals.policy,
                             .requests = counts.requests,
                             .limited_then = counts.limited_then,
                             .limited_now = counts.limited_now});
  }
  return top;
}

ReplayReport Replayer::report() const {
  ReplayReport report = counts_;
  if (first_) {
    report.first_ts = format_log_time(*first_);
    report.last_ts = format_log_time(*last_);
  }
  for (std::uint32_t i = 0; i < policies_.size(); ++i) {
    const PolicyState& state = policies_[i];
    if (i != none_index() || state.totals.requests > 0) {
      report.policies.push_back(state.totals);
    }
    if (state.override_keys == 0) {
      continue;
    }
    OverrideNote note{.policy = state.totals.policy,
                      .keys = state.override_keys,
                      .matched = state.overrides_matched,
                      .seen = 0};
    for (const std::uint64_t label : state.override_labels) {
      note.seen += users_.contains(user_key(i, label)) ? 1 : 0;
    }
    report.overrides.push_back(std::move(note));
  }
  report.top_users = top_users();
  return report;
}

}  // namespace sluice::replay
