// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/insight/utc_timestamp.hpp"

namespace sluice::insight {

/// One published event as every client receives it: its id and its Server-Sent Events record
/// ("id: N\nevent: TYPE\ndata: JSON\n\n"), formatted once and shared by every queue holding it.
struct FeedRecord {
  std::uint64_t id = 0;
  std::shared_ptr<const std::string> text;
};

/// One client of an EventFeed: a bounded queue of records the feed fills and the client's
/// connection empties (docs/operating.md "Live events"). When a record would not fit, the feed
/// marks the subscription dropped, empties it and forgets it: the connection must close (a slow
/// client is never waited for).
///
/// Confined to the feed's thread. The feed holds subscriptions weakly: releasing the last
/// shared_ptr unsubscribes. The wake function must stay callable while it is set.
class Subscription {
 public:
  explicit Subscription(std::size_t capacity) : capacity_(capacity) {}

  /// The records queued since the last call, oldest first.
  [[nodiscard]] std::vector<FeedRecord> take();
  [[nodiscard]] std::size_t queued() const noexcept { return queue_.size(); }
  /// Its queue overflowed: the client fell behind and must be disconnected.
  [[nodiscard]] bool is_dropped() const noexcept { return dropped_; }
  /// The feed closed (the gateway drains): the stream should end.
  [[nodiscard]] bool is_closed() const noexcept { return closed_; }
  /// Runs (on the feed's thread, inside publish() or close()) whenever records were queued or
  /// the subscription was dropped or closed. Empty: nothing runs.
  void on_wake(std::function<void()> wake) { wake_ = std::move(wake); }

 private:
  friend class EventFeed;
  /// Queues `record`; false (and dropped, emptied) when the queue is full.
  bool push(const FeedRecord& record);
  void close();
  void wake() const;

  std::size_t capacity_;
  std::deque<FeedRecord> queue_;
  bool dropped_ = false;
  bool closed_ = false;
  std::function<void()> wake_;
};

/// The bounds of an EventFeed (docs/operating.md "Live events").
struct FeedLimits {
  std::size_t retained = 256;    ///< events kept for replay
  std::size_t queue = 512;       ///< records queued per client before it is dropped
  std::size_t subscribers = 64;  ///< clients at once
};

/// The live event feed behind `GET /admin/events` (docs/operating.md "Live events"): numbers
/// each event from 1 per process, stamps it with the wall-clock time (`ts`), formats its SSE
/// record once, retains the last `retained` for replay (Last-Event-ID) and fans it out to at
/// most `subscribers` clients, each with a queue of `queue` records. publish() never blocks and
/// never waits for a client: its cost is one format plus one queue push per client.
///
/// Confined to one thread (the admin thread: every publisher, the admin API, the reload, the
/// state watcher, runs there). The wall clock function must stay callable for its lifetime.
class EventFeed {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;
  /// `wall_clock` empty: std::chrono::system_clock::now.
  explicit EventFeed(WallClock wall_clock = {}, FeedLimits limits = {});

  /// Emits one event of `type` (a short snake_case word): `data` (an object; anything else is
  /// put under "value") gets `ts` first. Returns the event's id.
  std::uint64_t publish(std::string_view type, const nlohmann::json& data);

  /// Also hands every event published from now on to `observer`: its type and its JSON body
  /// (with `ts`), as a client receives it. Empty: no observer.
  void observe(std::function<void(std::string_view type, const std::string& body)> observer) {
    observer_ = std::move(observer);
  }

  /// A new client, with the retained events after `since` already queued (every retained event
  /// when `since` is beyond the newest id: the client saw another process). nullptr when
  /// `subscribers` clients are attached or the feed is closed.
  [[nodiscard]] std::shared_ptr<Subscription> subscribe(std::optional<std::uint64_t> since);

  /// Ends every subscription and refuses new ones (the gateway drains).
  void close();

  /// close() was called.
  [[nodiscard]] bool is_closed() const noexcept { return closed_; }
  /// The clients attached now (after close(): those whose streams have not ended yet).
  [[nodiscard]] std::size_t subscribers();
  /// The id of the newest event (0 before the first).
  [[nodiscard]] std::uint64_t last_id() const noexcept { return next_id_ - 1; }
  /// Clients dropped for falling behind, since the start.
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }
  [[nodiscard]] const std::deque<FeedRecord>& retained() const noexcept { return retained_; }

 private:
  void prune();

  WallClock wall_clock_;
  std::function<void(std::string_view type, const std::string& body)> observer_;
  FeedLimits limits_;
  std::uint64_t next_id_ = 1;
  std::uint64_t dropped_ = 0;
  bool closed_ = false;
  std::deque<FeedRecord> retained_;
  std::vector<std::weak_ptr<Subscription>> subscribers_;
};

}  // namespace sluice::insight
