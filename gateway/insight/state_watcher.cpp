// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/state_watcher.hpp"

#include <utility>

namespace sluice::insight {

std::vector<StateEvent> state_changes(const StateSample& before, const StateSample& after) {
  std::vector<StateEvent> events;
  const auto was_open = [&](const std::string& backend) {
    const auto it = before.breakers.find(backend);
    return it != before.breakers.end() && it->second > 0;
  };
  for (const auto& [backend, p] : after.breakers) {
    if (p > 0 && !was_open(backend)) {
      events.push_back({"breaker_open", {{"backend", backend}, {"drop_probability", p}}});
    }
  }
  for (const auto& [backend, p] : before.breakers) {
    const auto now = after.breakers.find(backend);
    // A backend removed while its breaker dropped closes too: nothing drops for it any more.
    if (p > 0 && (now == after.breakers.end() || now->second <= 0)) {
      events.push_back({"breaker_close", {{"backend", backend}}});
    }
  }
  if (before.store_fallback != after.store_fallback) {
    events.push_back({"store_fallback", {{"on", after.store_fallback}}});
  }
  for (const auto& [key, state] : after.endpoints) {
    const auto was = before.endpoints.find(key);
    if (was != before.endpoints.end() && was->second != state) {
      events.push_back({"endpoint_state",
                        {{"backend", key.first},
                         {"endpoint", key.second},
                         {"from", was->second},
                         {"to", state}}});
    }
  }
  return events;
}

void BreakerHistory::record(const std::map<std::string, double, std::less<>>& breakers) {
  std::erase_if(series_, [&](const auto& entry) { return !breakers.contains(entry.first); });
  for (const auto& [backend, p] : breakers) {
    auto& points = series_[backend];
    points.push_back(p);
    while (points.size() > length_) {
      points.pop_front();
    }
  }
}

nlohmann::json BreakerHistory::to_json(std::chrono::milliseconds interval) const {
  nlohmann::json backends = nlohmann::json::object();
  for (const auto& [backend, points] : series_) {
    backends[backend] = nlohmann::json(std::vector<double>(points.begin(), points.end()));
  }
  return {{"interval_ms", interval.count()}, {"backends", std::move(backends)}};
}

StateWatcher::StateWatcher(const boost::asio::any_io_executor& executor, const core::Clock& clock,
                           Sources sources, Publish publish)
    : clock_(clock), sources_(std::move(sources)), publish_(std::move(publish)), timer_(executor) {}

void StateWatcher::start() {
  take_baseline();
  running_ = true;
  schedule();
}

void StateWatcher::stop() {
  running_ = false;
  timer_.cancel();
}

void StateWatcher::schedule() {
  timer_.expires_after(kPollInterval);
  // The watcher outlives every run of its io_context (the gateway owns both and stops the
  // watcher first), and a cancelled wait returns before touching it.
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !running_) {
      return;
    }
    poll();
    schedule();
  });
}

StateSample StateWatcher::sample() const {
  StateSample out;
  for (const auto& [backend, breaker] : sources_.breakers.all()) {
    out.breakers.emplace(backend, breaker->snapshot().drop_probability);
  }
  out.store_fallback = sources_.store_fallback && sources_.store_fallback();
  const core::TimePoint now = clock_.now();
  for (const auto& [backend, health] : sources_.health.all()) {
    for (std::size_t i = 0; i < health->size(); ++i) {
      out.endpoints.emplace(std::make_pair(backend, health->label(i)),
                            std::string(health::to_string(health->state(i, now))));
    }
  }
  return out;
}

void StateWatcher::take_baseline() {
  last_ = sample();
  const core::TimePoint now = clock_.now();
  history_.record(last_.breakers);
  next_history_ = now + kHistoryInterval;
}

void StateWatcher::poll() {
  StateSample next = sample();
  for (auto& event : state_changes(last_, next)) {
    publish_(event.type, std::move(event.data));
  }
  record_history(next, clock_.now());
  last_ = std::move(next);
}

void StateWatcher::record_history(const StateSample& now_state, core::TimePoint now) {
  if (now < next_history_) {
    return;
  }
  history_.record(now_state.breakers);
  // On the 5 s grid from the baseline; after a stall, the next point is due a full interval on.
  next_history_ += kHistoryInterval;
  if (next_history_ <= now) {
    next_history_ = now + kHistoryInterval;
  }
}

}  // namespace sluice::insight
