// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/core/keyed_hash.hpp"
#include "gateway/core/random.hpp"
#include "gateway/store/hybrid_fleet_count.hpp"
#include "gateway/store/hybrid_journal.hpp"
#include "gateway/store/hybrid_key_ledger.hpp"
#include "gateway/store/limit_store.hpp"
#include "gateway/store/memory_store.hpp"
#include "gateway/store/redis_router.hpp"
#include "gateway/store/redis_scripts.hpp"

namespace sluice::store {

/// `store.type: "redis"` (docs/behaviour.md "Configuration"): limit counts live in Redis, shared by
/// every replica. The decisions a thread makes in one event-loop turn go as one EVALSHA of the
/// sliding-window script (redis_store_batch.cpp) on the thread's own router: one pipelined
/// connection per io_context to a standalone Redis, or one per master of a Redis Cluster (found
/// by itself, see RedisRouter). Redis keys are `sluice:{POLICY:HASH}:ring`, where HASH is a
/// SipHash of the user key under a random key shared through Redis (`sluice:hash-key`),
/// so no credential is ever stored and a Redis Cluster keeps each window on one slot.
///
/// While Redis is unreachable or slower than `timeout`, `on_error` decides: `local` and
/// `local_share` use an embedded MemoryStore (at the full limit, or the limit divided by the live
/// replicas last seen through the heartbeat), `allow` admits, `deny` answers with
/// LimitDecision::unavailable. Switching into and out of fallback is logged once per transition.
///
/// `mode: kHybrid` (docs/distributed.md "Hybrid mode") decides every request locally, in the
/// embedded store at the full limit less what the other replicas hold, and every `sync / 2`
/// each thread pushes the requests it admitted per key and reads back the others' count in
/// plain commands, pipelined in groups of keys (redis_store_hybrid.cpp). A failed sync puts the
/// thread under `on_error` until a sync succeeds; nothing it admitted meanwhile is lost.
///
/// Thread-safety: decisions are thread-safe; each thread decides through the slot attach() gave
/// it for its own io_context (a slot without a ready connection decides by the fallback).
/// attach(), start() and stop() are for the owner, before and after the io_context threads run.
class RedisStore final : public LimitStore {
 public:
  enum class OnError { kLocal, kLocalShare, kAllow, kDeny };
  enum class Outcome { kOk, kError, kTimeout };
  enum class Mode { kExact, kHybrid };

  struct Options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;
    std::optional<std::string> password;
    std::chrono::milliseconds timeout{50};
    OnError on_error = OnError::kLocalShare;
    std::uint64_t max_keys = 1'000'000;  ///< of the local fallback store
    std::chrono::milliseconds heartbeat_ttl{3000};
    Mode mode = Mode::kExact;
    std::chrono::milliseconds sync{100};  ///< hybrid: a thread exchanges every sync / 2
    std::size_t max_sync_batch = 20000;   ///< hybrid: keys per thread per exchange
  };
  /// Where the store reports to (metrics); called from any thread.
  struct Observer {
    std::function<void(Outcome)> operation;
    std::function<void(bool active)> fallback;
    /// Hybrid: one thread's exchange completed after `seconds`; `ok` false if any key failed.
    std::function<void(double seconds, bool ok)> sync;
  };

  RedisStore(const core::Clock& clock, core::Random& random, Options options, Observer observer,
             std::shared_ptr<spdlog::logger> log);
  ~RedisStore() override;
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  /// Creates the connection(s) of one io_context and returns its slot.
  StoreSlot attach(boost::asio::io_context& ioc) override;
  void start() override;
  /// Closes and drops every connection: after the io_context threads stopped, before the
  /// io_contexts are destroyed.
  void stop() override;
  /// The heartbeat every call (about once a second), the fallback's idle keys every 10 s.
  void tick(StoreSlot slot) override;
  /// Refreshes this replica's heartbeat and learns how many replicas are live (local_share).
  /// From the thread of `slot`.
  void heartbeat(StoreSlot slot);
  [[nodiscard]] bool fallback_active() const noexcept { return fallback_.load(); }
  [[nodiscard]] std::size_t live_replicas() const noexcept { return live_replicas_.load(); }
  /// The local fallback store's idle keys (call periodically, as for the memory store).
  std::size_t sweep_idle() { return fallback_store_.sweep_idle(); }

  PolicyId apply(const limiter::Policy& policy) override;
  bool remove(std::string_view name) override;
  [[nodiscard]] std::optional<PolicyId> find(std::string_view name) const override;
  [[nodiscard]] std::optional<limiter::LimitDecision> try_decide(StoreSlot slot, PolicyId policy,
                                                                 std::string_view key) override;
  void async_decide(StoreSlot slot, PolicyId policy, std::string_view key,
                    DecisionCompletion completion) override;
  [[nodiscard]] std::optional<limiter::KeyState> try_inspect(StoreSlot slot, PolicyId policy,
                                                             std::string_view key) override;
  void async_inspect(StoreSlot slot, PolicyId policy, std::string_view key,
                     InspectCompletion completion) override;
  /// Keys the local fallback store holds (0 while Redis answers: the shared windows are in
  /// Redis, see docs/distributed.md).
  [[nodiscard]] std::size_t tracked_keys(PolicyId policy) const override;

 private:
  /// Redis' clock (ms, from TIME) and the local time its reply was read.
  struct RedisClock {
    std::int64_t redis_ms = 0;
    core::TimePoint read_at{};
  };
  /// What one decision needs of a policy, copied under the lock.
  struct Call {
    bool live = false;
    std::uint32_t limit = 0;
    std::uint32_t window_ms = 0;
    std::uint32_t buckets = 1;
    PolicyId fallback;
    std::string redis_key;
  };
  /// Exact mode: a decision (or an inspection) waiting for its thread's next batch.
  struct Pending {
    Call call;
    std::string key;              ///< the user's key, for the fallback
    std::uint16_t hash_slot = 0;  ///< of call.redis_key (a Redis Cluster batches by slot)
    std::variant<DecisionCompletion, InspectCompletion> completion;
    [[nodiscard]] bool counting() const noexcept { return completion.index() == 0; }

    // Move-constructed only. Asio 1.81's any_completion_handler has a constructor template that
    // takes any handler by lvalue reference, so a Completion looks copyable and a copy wraps
    // the handler in itself without end; and its move assignment passes `other` as an lvalue
    // to that template, with the same end. So nothing may copy or assign a Pending (a vector
    // grows by moving a type whose move is noexcept; a sort would assign).
    Pending(Call c, std::string k, std::variant<DecisionCompletion, InspectCompletion> done)
        : call(std::move(c)), key(std::move(k)), completion(std::move(done)) {}
    Pending(Pending&&) noexcept = default;
    Pending& operator=(Pending&&) = delete;
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    ~Pending() = default;
  };
  struct Slot {
    boost::asio::io_context* ioc = nullptr;
    std::shared_ptr<RedisRouter> router;
    std::optional<core::KeyedHash> hash;  ///< the shared hash key, once connected
    bool ever_ready = false;              ///< (its own thread only)
    // Exact mode only (its own thread): this event-loop turn's decisions, sent in one call.
    std::vector<Pending> batch;
    bool flush_posted = false;
    /// Its last decision fell back (set by its own thread; read under fallback_mutex_).
    std::atomic<bool> failing{false};
    // Hybrid mode only (its own thread):
    HybridJournal journal;
    std::unique_ptr<boost::asio::steady_timer> sync_timer;
    bool syncing = false;  ///< an exchange is in flight
    core::TimePoint last_forget{};
    std::optional<RedisClock> redis_clock;  ///< from the last exchange's TIME
    std::size_t forget_shard = 0;           ///< the HybridKeyLedger shard it forgets next
  };

  /// The slot's state when its connection is ready to decide, else null.
  [[nodiscard]] Slot* ready_slot(StoreSlot slot) const;
  [[nodiscard]] Call prepare(PolicyId policy, std::string_view key, const Slot* slot) const;
  // Exact mode (redis_store_batch.cpp).
  /// Adds a decision to its thread's batch; the first of a turn posts the flush.
  void enqueue(Slot& slot, Pending pending);
  /// Sends the turn's batch: one script call per kMaxKeysPerCall keys (per hash slot in a
  /// Redis Cluster).
  void flush(Slot& slot);
  /// One script call on `batch` (EVAL after a NOSCRIPT reply).
  void send_batch(Slot& slot, std::vector<Pending> batch, bool eval);
  /// Completes every decision of `batch` from the call's reply, or by the fallback.
  void finish_batch(Slot& slot, std::vector<Pending>& batch, const RedisOutcome& outcome);
  [[nodiscard]] limiter::LimitDecision fallback_decision(const Call& call, std::string_view key);
  [[nodiscard]] limiter::KeyState fallback_state(const Call& call, std::string_view key);
  /// Counts a decision's outcome and notes whether `failing` (its slot's flag) fell back.
  void note(std::atomic<bool>& failing, Outcome outcome);
  /// The store is in fallback while any slot is: logs and reports only the first slot entering
  /// it and the last one leaving (docs/distributed.md, "When Redis is away").
  void set_failing(std::atomic<bool>& failing, Outcome outcome);
  [[nodiscard]] std::atomic<bool>& failing_flag(StoreSlot slot);
  void rescale_fallback();
  [[nodiscard]] limiter::Policy scaled(const limiter::Policy& policy) const;
  [[nodiscard]] std::vector<std::string> setup_commands() const;
  /// Reads (and, first of all replicas, picks) the shared hash key through `slot`'s router.
  void read_hash_key(Slot& slot);

  // Hybrid mode (redis_store_hybrid.cpp).
  [[nodiscard]] limiter::LimitDecision hybrid_decide(StoreSlot store_slot, PolicyId policy,
                                                     std::string_view key);
  void hybrid_inspect(Slot* slot, PolicyId policy, std::string_view key,
                      InspectCompletion completion);
  /// Requests the local store counts for other replicas under `local_share` in hybrid mode.
  [[nodiscard]] std::uint32_t held_for_share(std::uint32_t limit) const;
  void arm_sync(Slot& slot);
  /// One thread's exchange in flight: its groups still to answer, and how it went.
  struct Exchange {
    core::TimePoint started;
    std::size_t left = 0;
    Outcome worst = Outcome::kOk;
  };
  struct SyncKey {
    SyncItem item;
    std::uint16_t hash_slot = 0;
    std::string redis_key;
  };
  /// Where one key's replies are among its group's.
  struct ReplyIndex {
    static constexpr std::size_t kNotSent = static_cast<std::size_t>(-1);
    std::size_t push = kNotSent;    ///< HINCRBY (keys with a delta)
    std::size_t expire = kNotSent;  ///< PEXPIRE (once a window)
    std::size_t read = kNotSent;    ///< HGETALL or HMGET
  };
  /// One group of an exchange in flight: the keys of one policy (and hash slot), and the
  /// group's replies once they are all in (kept where they arrived, read by index).
  struct GroupExchange {
    std::int64_t bucket = 0;     ///< the start of the bucket pushed into (Redis' clock)
    std::int64_t live_from = 0;  ///< the oldest live bucket's start
    std::vector<SyncKey> keys;
    std::int64_t settled_before = 0;  ///< buckets starting before it can change no more
    std::int64_t held_before = 0;     ///< ones before it are held once read (HybridKeyLedger)
    HybridShape shape;
    std::int64_t now_ms = 0;                       ///< when it was sent (Redis' clock)
    std::vector<ReplyIndex> at;                    ///< per key
    std::vector<HybridKeyLedger::ReadPlan> reads;  ///< per key: a whole read or which buckets
    RedisStatus status = RedisStatus::kUnavailable;
    std::vector<RedisReply> replies;
  };
  /// Sends one group's commands, pipelined as one group (RedisRouter::execute_group): per key
  /// HINCRBY (with a delta), PEXPIRE (once a window), and HMGET of the buckets that can still
  /// change (HGETALL when the settled ones are not known).
  void send_group(Slot& slot, const std::shared_ptr<Exchange>& exchange, HybridShape shape,
                  RedisClock clock, std::vector<SyncKey> group);
  /// A group's replies are all in: own pushes noted, each key's others' count to the journal.
  void finish_group(Slot& slot, const std::shared_ptr<Exchange>& exchange, GroupExchange& group);
  /// One group (or the TIME that failed) is done; the last one ends the exchange.
  void finish_exchange(Slot& slot, const std::shared_ptr<Exchange>& exchange);
  /// One exchange of `slot`'s journal with Redis.
  void sync(Slot& slot);
  [[nodiscard]] bool hybrid() const noexcept { return options_.mode == Mode::kHybrid; }

  const core::Clock& clock_;
  core::Random& random_;
  const Options options_;
  const Observer observer_;
  std::shared_ptr<spdlog::logger> log_;
  const std::string replica_id_;
  MemoryStore fallback_store_;
  HybridKeyLedger ledger_;  ///< hybrid: what this replica pushed, per key and bucket

  std::vector<std::unique_ptr<Slot>> slots_;  ///< fixed once the threads run

  mutable std::mutex mutex_;  ///< the policy table (short critical sections, never across I/O)
  std::map<std::string, std::uint32_t, std::less<>> ids_;
  std::vector<limiter::Policy> policies_;  ///< by PolicyId::index; requests 0 + no name = removed
  std::vector<bool> live_;
  std::vector<PolicyId> fallback_ids_;

  std::atomic<bool> fallback_{false};
  std::mutex fallback_mutex_;      ///< transitions of fallback_ (rare: never per decision)
  std::size_t failing_slots_ = 0;  ///< slots whose flag is set (under fallback_mutex_)
  std::atomic<bool> unslotted_failing_{false};  ///< calls with no valid slot
  std::atomic<std::size_t> ready_slots_{0};     ///< slots that have been ready at least once
  std::atomic<std::size_t> live_replicas_{1};
  core::TimePoint last_sweep_{};  ///< of the fallback store (tick(), the control thread)
};

}  // namespace sluice::store
