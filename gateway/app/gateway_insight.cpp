// SPDX-License-Identifier: Apache-2.0
// Gateway, live events (docs/operating.md "Live events", docs/decisions/0016-live-event-feed.md):
// the event feed's publishers that belong to the composition root (reloads, the state watcher)
// and its end at the drain. All on the control thread, where the feed lives.
#include <chrono>
#include <optional>
#include <string>

#include "gateway/app/gateway.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::app {
namespace {

using namespace std::chrono_literals;
constexpr auto kStreamsGrace = 500ms;  // how long the end waits for event streams to finish
constexpr auto kStreamsPoll = 5ms;
/// How often the sketches take the workers' samples: a ring (TopUsersRegistry::kRingCapacity)
/// fills in that time only above 327,000 decisions per second on one worker.
constexpr auto kTopUsersDrainInterval = 50ms;

}  // namespace

void Gateway::start_insight() {
  watcher_ = std::make_unique<insight::StateWatcher>(
      control_.get_executor(), clock_,
      insight::StateWatcher::Sources{breakers_, health_, [this] { return store_fallback(); }},
      [this](std::string_view type, const nlohmann::json& data) { events_.publish(type, data); });
  watcher_->start();
  if (top_users_) {
    schedule_top_users_drain();
  }
}

void Gateway::schedule_top_users_drain() {
  top_users_timer_.expires_after(kTopUsersDrainInterval);
  top_users_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      top_users_->drain();
      schedule_top_users_drain();
    }
  });
}

void Gateway::stop_insight() {
  if (watcher_) {
    watcher_->stop();
  }
  events_.close();
  fleet_events_.close();
}

void Gateway::stop_after_streams() {
  // The streams ended at the drain's start (stop_insight) and normally sent their last chunk
  // long ago; this only waits for one still writing it, briefly.
  if (streams_deadline_ == core::TimePoint{}) {
    streams_deadline_ = clock_.now() + kStreamsGrace;
  }
  if ((events_.subscribers() == 0 && fleet_events_.subscribers() == 0) ||
      clock_.now() >= streams_deadline_) {
    control_.stop();
    return;
  }
  streams_timer_.expires_after(kStreamsPoll);
  streams_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      stop_after_streams();
    }
  });
}

void Gateway::publish_outcome(std::string_view type, const std::optional<std::string>& error) {
  nlohmann::json data{{"ok", !error}};
  if (error) {
    data["error"] = *error;
  }
  events_.publish(type, data);
}

void Gateway::publish_reload(const std::optional<std::string>& error) {
  nlohmann::json data{{"ok", !error}};
  if (error) {
    data["error"] = *error;
  } else if (const insight::ConfigVersion* version = history_.latest()) {
    data["version"] = version->version;  // the version this reload made
  }
  events_.publish("reload", data);
}

bool Gateway::store_fallback() const {
  // Only the Redis store falls back; the memory store is always itself.
  const auto* redis = dynamic_cast<const store::RedisStore*>(store_.store.get());
  return redis != nullptr && redis->fallback_active();
}

nlohmann::json Gateway::breaker_history() const {
  if (watcher_) {
    return watcher_->breaker_history();
  }
  return {{"interval_ms", insight::StateWatcher::kHistoryInterval.count()},
          {"backends", nlohmann::json::object()}};
}

}  // namespace sluice::app
