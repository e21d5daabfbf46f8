// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/event_feed.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <utility>

namespace sluice::insight {

std::vector<FeedRecord> Subscription::take() {
  std::vector<FeedRecord> out(std::make_move_iterator(queue_.begin()),
                              std::make_move_iterator(queue_.end()));
  queue_.clear();
  return out;
}

bool Subscription::push(const FeedRecord& record) {
  if (queue_.size() >= capacity_) {
    dropped_ = true;
    queue_.clear();  // the connection closes: nothing queued will be sent
    return false;
  }
  queue_.push_back(record);
  return true;
}

void Subscription::close() {
  closed_ = true;
}

void Subscription::wake() const {
  if (wake_) {
    wake_();
  }
}

EventFeed::EventFeed(WallClock wall_clock, FeedLimits limits)
    : wall_clock_(wall_clock ? std::move(wall_clock) : WallClock(std::chrono::system_clock::now)),
      limits_(limits) {}

std::uint64_t EventFeed::publish(std::string_view type, const nlohmann::json& data) {
  // ordered_json, so `ts` leads and the publisher's fields follow (sorted, as json keeps them).
  nlohmann::ordered_json body;
  body["ts"] = utc_timestamp(wall_clock_());
  if (data.is_object()) {
    for (const auto& [key, value] : data.items()) {
      body[key] = value;
    }
  } else if (!data.is_null()) {
    body["value"] = data;
  }
  const std::uint64_t id = next_id_++;
  // One line of JSON (dump without indent never emits a newline, and strings escape theirs),
  // so one `data:` field carries it. Invalid UTF-8 is replaced rather than thrown on.
  const std::string json =
      body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (observer_) {
    observer_(type, json);
  }
  auto text = std::make_shared<const std::string>(
      "id: " + std::to_string(id) + "\nevent: " + std::string(type) + "\ndata: " + json + "\n\n");
  const FeedRecord record{id, std::move(text)};
  retained_.push_back(record);
  if (retained_.size() > limits_.retained) {
    retained_.pop_front();
  }
  if (closed_) {
    return id;  // the streams are ending: they get nothing new
  }
  // Wake after every push: a wake may close a connection, but never publishes or subscribes,
  // so the list is stable while it is walked.
  for (auto& weak : subscribers_) {
    if (auto subscriber = weak.lock()) {
      if (!subscriber->push(record)) {
        ++dropped_;
        weak.reset();  // forgotten: it no longer counts against the limit
      }
      subscriber->wake();
    }
  }
  prune();
  return id;
}

std::shared_ptr<Subscription> EventFeed::subscribe(std::optional<std::uint64_t> since) {
  prune();
  if (closed_ || subscribers_.size() >= limits_.subscribers) {
    return nullptr;
  }
  auto subscription = std::make_shared<Subscription>(limits_.queue);
  if (since) {
    // An id beyond the newest was handed out by an earlier process (ids restart at 1): all
    // that is retained is news to this client.
    const std::uint64_t after = *since > last_id() ? 0 : *since;
    for (const FeedRecord& record : retained_) {
      if (record.id > after) {
        subscription->push(record);  // retained <= queue in every sane Limits: fits
      }
    }
  }
  subscribers_.push_back(subscription);
  return subscription;
}

void EventFeed::close() {
  closed_ = true;
  // They stay listed until their streams let go of them: subscribers() then tells the gateway
  // when every stream has ended.
  for (const auto& weak : subscribers_) {
    if (auto subscriber = weak.lock()) {
      subscriber->close();
      subscriber->wake();
    }
  }
}

std::size_t EventFeed::subscribers() {
  prune();
  return subscribers_.size();
}

void EventFeed::prune() {
  std::erase_if(subscribers_,
                [](const std::weak_ptr<Subscription>& weak) { return weak.expired(); });
}

}  // namespace sluice::insight
