// SPDX-License-Identifier: Apache-2.0
#include "gateway/fleet/fleet_sync.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <random>
#include <utility>

namespace sluice::fleet {
namespace {

using namespace std::chrono_literals;

constexpr int kLostAfterBeats = 5;
constexpr std::int64_t kForgetAfterMs = 60000;
constexpr std::chrono::milliseconds kFirstBackoff{100};

}  // namespace

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string replica_id_for(const config::FleetConfig& config) {
  if (config.replica_id) {
    return *config.replica_id;
  }
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) {
    host = {'s', 'l', 'u', 'i', 'c', 'e'};
  }
  std::random_device device;
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string id(host.data());
  id += '-';
  for (int i = 0; i < 6; ++i) {
    id += kDigits[device() % kDigits.size()];
  }
  return id;
}

FleetSync::FleetSync(FleetRedis::Options redis, config::FleetConfig config, std::string replica_id,
                     Handlers handlers, std::shared_ptr<spdlog::logger> log)
    : redis_options_(std::move(redis)),
      config_(std::move(config)),
      replica_id_(std::move(replica_id)),
      apply_(std::move(handlers.apply)),
      events_(std::move(handlers.events)),
      drained_(std::move(handlers.drained)),
      log_(std::move(log)) {}

FleetSync::~FleetSync() {
  stop();
}

void FleetSync::start() {
  thread_ = std::thread([this] { run(); });
}

void FleetSync::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void FleetSync::applied(std::uint64_t version, std::string config) {
  const std::lock_guard lock(mutex_);
  applied_version_ = version;
  applied_config_ = std::move(config);
}

void FleetSync::set_heartbeat(nlohmann::json fields) {
  const std::lock_guard lock(mutex_);
  heartbeat_ = std::move(fields);
}

nlohmann::json FleetSync::replicas() const {
  const std::lock_guard lock(mutex_);
  return replicas_;
}

bool FleetSync::pause(std::chrono::milliseconds how_long) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, how_long, [this] { return stopping_; });
}

void FleetSync::run() {
  FleetRedis redis(redis_options_);
  FleetStore store(redis, config_.name);
  // A local event waits at most one block before it is sent (the read cannot be interrupted).
  const auto block = std::clamp<std::chrono::milliseconds>(config_.heartbeat / 2, 50ms, 100ms);
  std::optional<LogCursor> cursor;
  auto next_beat = std::chrono::steady_clock::now();
  auto next_top = next_beat;
  auto backoff = kFirstBackoff;
  const auto went_down = [&] {
    if (connected_.exchange(false)) {
      log_->warn(
          "fleet unavailable fleet={} error={} (serving the version applied; admin "
          "changes answer 503 until Redis is back)",
          config_.name, redis.error());
    }
    cursor.reset();
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, config_.heartbeat);
  };
  for (;;) {
    if (!cursor) {
      cursor = store.newest();
      if (!cursor) {
        went_down();
        if (!pause(backoff)) {
          return;
        }
        continue;
      }
      next_beat = std::chrono::steady_clock::now();  // check the fleet's version at once
    }
    if (std::chrono::steady_clock::now() >= next_beat) {
      beat(store);
      next_beat = std::chrono::steady_clock::now() + config_.heartbeat;
    }
    if (std::chrono::steady_clock::now() >= next_top) {
      publish_top(store);
      next_top = std::chrono::steady_clock::now() + std::min(config_.heartbeat, kPublishTopEvery);
    }
    send_events(store);
    auto read = store.read(*cursor, block);
    {
      const std::lock_guard lock(mutex_);
      if (stopping_) {
        return;
      }
    }
    if (!read) {
      went_down();
      if (!pause(backoff)) {
        return;
      }
      continue;
    }
    if (!connected_.exchange(true)) {
      log_->info("fleet connected fleet={} replica={}", config_.name, replica_id_);
    }
    backoff = kFirstBackoff;
    if (!read->events.empty()) {
      const bool drain_changed =
          std::any_of(read->events.begin(), read->events.end(),
                      [](const FleetEvent& event) { return event.type == kDrainEvent; });
      events_(std::move(read->events));
      if (drain_changed) {
        refresh_draining(store);
      }
    }
    const auto newest = std::max_element(
        read->versions.begin(), read->versions.end(),
        [](const FleetVersion& a, const FleetVersion& b) { return a.version < b.version; });
    if (newest != read->versions.end()) {
      std::uint64_t applied = 0;
      {
        const std::lock_guard lock(mutex_);
        applied = applied_version_;
      }
      // The log says a newer version exists; the doc holds it (and anything newer still): one
      // read however far behind this replica is.
      if (newest->version > applied) {
        if (auto current = store.current(); current && current->version >= newest->version) {
          apply_(std::move(*current), false);
        }
      }
    }
  }
}

void FleetSync::publish_event(std::string type, std::string body) {
  const std::lock_guard lock(mutex_);
  if (outgoing_.size() >= kMaxOutgoingEvents) {
    outgoing_.pop_front();  // Redis away for long: the oldest go first, as in the local feed
  }
  outgoing_.push_back(FleetEvent{replica_id_, std::move(type), std::move(body)});
}

void FleetSync::send_events(FleetStore& store) {
  std::deque<FleetEvent> sending;
  {
    const std::lock_guard lock(mutex_);
    sending.swap(outgoing_);
  }
  while (!sending.empty() && store.add_event(sending.front())) {
    sending.pop_front();
  }
  if (!sending.empty()) {  // unavailable: put back what was not sent, before anything newer
    const std::lock_guard lock(mutex_);
    sending.insert(sending.end(), outgoing_.begin(), outgoing_.end());
    outgoing_.swap(sending);
    while (outgoing_.size() > kMaxOutgoingEvents) {
      outgoing_.pop_front();
    }
  }
}

void FleetSync::set_top(std::string top) {
  const std::lock_guard lock(mutex_);
  top_ = std::move(top);
}

void FleetSync::publish_top(FleetStore& store) {
  std::string top;
  {
    const std::lock_guard lock(mutex_);
    top = top_;
  }
  if (!top.empty()) {
    (void)store.publish_top(replica_id_, top);  // a failure: the log read notices and backs off
  }
}

void FleetSync::beat(FleetStore& store) {
  const std::int64_t now_ms = wall_ms();
  nlohmann::json heartbeat;
  FleetVersion ours;
  {
    const std::lock_guard lock(mutex_);
    heartbeat = heartbeat_;
    ours.version = applied_version_;
    ours.config = applied_config_;
  }
  heartbeat["replica"] = replica_id_;
  heartbeat["version"] = ours.version;
  heartbeat["last_seen_ms"] = now_ms;
  if (!store.heartbeat(replica_id_, heartbeat.dump())) {
    return;  // the log read that follows notices and backs off
  }
  const auto current = store.current();
  if (!current) {
    return;
  }
  if (current->version == 0 && !ours.config.empty()) {
    // The fleet has no version: Redis lost its data (or was flushed). Ours becomes it again,
    // under the same number, unless another replica was first.
    ours.version = std::max<std::uint64_t>(ours.version, 1);
    ours.replica = replica_id_;
    ours.at_ms = now_ms;
    for (const auto& [backend, endpoint] : drained_seen_.value_or(DrainedEndpoints{})) {
      store.set_draining(replica_id_, backend, endpoint, true);  // the drains it lost, too
    }
    if (const auto taken = store.take_or_seed(ours, "reseed")) {
      log_->warn("fleet had no version fleet={}: re-seeded version={} by={}", config_.name,
                 taken->version, taken->replica);
      if (taken->version != ours.version || taken->config != ours.config) {
        apply_(*taken, true);
      }
    }
  } else if (current->version != 0 && current->version != ours.version) {
    apply_(*current, true);
  }
  refresh_replicas(store, now_ms);
  refresh_draining(store);
}

void FleetSync::refresh_draining(FleetStore& store) {
  auto drained = store.draining();
  if (drained && drained != drained_seen_) {
    drained_seen_ = drained;
    drained_(std::move(*drained));
  }
}

void FleetSync::refresh_replicas(FleetStore& store, std::int64_t now_ms) {
  const auto all = store.replicas();
  if (!all) {
    return;
  }
  const std::int64_t lost_after = kLostAfterBeats * config_.heartbeat.count();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [id, text] : *all) {
    auto entry = nlohmann::json::parse(text, nullptr, false);
    if (!entry.is_object()) {
      continue;
    }
    const std::int64_t seen = entry.value("last_seen_ms", std::int64_t{0});
    const std::int64_t late = std::max<std::int64_t>(0, now_ms - seen);
    if (late > lost_after + kForgetAfterMs) {
      (void)store.forget(id);
      log_->info("fleet forgot replica={} (lost for more than 60 s)", id);
      continue;
    }
    entry["state"] = late > lost_after ? "lost" : "ok";
    entry["last_seen_ms"] = late;  // how long ago, as GET /admin/fleet shows it
    list.push_back(std::move(entry));
  }
  const std::lock_guard lock(mutex_);
  replicas_ = std::move(list);
}

}  // namespace sluice::fleet
