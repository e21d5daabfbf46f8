// SPDX-License-Identifier: Apache-2.0
// RedisStore under `store.mode: "hybrid"` (docs/distributed.md, "Hybrid mode"): every decision
// is local, in the embedded store at the full limit less what the other replicas hold for the
// key, and each thread exchanges its journal with Redis every `sync / 2`. An exchange is plain
// commands, no script (docs/decisions/0029-hybrid-exchange-in-plain-commands.md): Redis TIME,
// then per key HINCRBY of the requests admitted into the current bucket's field (its reply is
// that bucket's fleet count), PEXPIRE once a window, and a read of the buckets before it that
// can still change and are not held (HMGET; HGETALL the first time; decision
// docs/decisions/0031-hybrid-held-buckets.md); the others' count is the fleet's live
// buckets less what this replica pushed into them (HybridKeyLedger). A failed
// exchange puts the thread under `on_error` until one succeeds; what it admitted meanwhile is
// pushed with the next batch. The rest of the store: redis_store.cpp.
#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>
#include <charconv>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "gateway/store/hybrid_fleet_count.hpp"
#include "gateway/store/redis_cluster_map.hpp"
#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::store {
namespace {

using std::chrono::milliseconds;

constexpr core::Duration kForgetEvery = std::chrono::seconds(1);
constexpr std::string_view kFleetSuffix = ":fleet";
/// Keys per group: a group's commands are formatted in one event-loop turn.
constexpr std::size_t kKeysPerCall = 128;
/// A bucket is settled this many command timeouts after its end.
constexpr std::int64_t kSettleTimeouts = 2;
/// Buckets read by name at most (HMGET); more, and the whole hash is read (HGETALL).
constexpr std::size_t kMaxFieldsRead = 8;

/// Redis' clock in ms from a TIME reply, or nullopt for anything else.
std::optional<std::int64_t> redis_ms_from(const RedisOutcome& outcome) {
  if (outcome.status != RedisStatus::kOk || outcome.reply.type != RedisReply::Type::kArray ||
      outcome.reply.elements.size() != 2) {
    return std::nullopt;
  }
  try {
    return std::stoll(outcome.reply.elements[0].text) * 1000 +
           std::stoll(outcome.reply.elements[1].text) / 1000;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The names (start in ms) of the buckets an exchange group reads by name: the current one and
/// the kMaxFieldsRead - 1 before it, printed once per group.
class BucketNames {
 public:
  BucketNames(std::int64_t bucket, std::int64_t width_ms)
      : bucket_(bucket), width_(std::max<std::int64_t>(width_ms, 1)) {
    for (std::size_t k = 0; k < kMaxFieldsRead; ++k) {
      const std::int64_t start = bucket_ - static_cast<std::int64_t>(k) * width_;
      const char* const last =
          std::to_chars(printed_[k].data(), printed_[k].data() + printed_[k].size(), start).ptr;
      names_[k] = {printed_[k].data(), static_cast<std::size_t>(last - printed_[k].data())};
    }
  }
  /// Whether the buckets from `from` to the current one are all named here.
  [[nodiscard]] bool covers(std::int64_t from) const noexcept {
    const std::int64_t back = bucket_ - from;
    return back >= 0 && back % width_ == 0 && back / width_ < std::ssize(names_);
  }
  /// The name of the bucket starting at `start` (covers(start)).
  [[nodiscard]] std::string_view name(std::int64_t start) const {
    return names_.at(static_cast<std::size_t>((bucket_ - start) / width_));
  }

 private:
  std::int64_t bucket_;
  std::int64_t width_;
  std::array<std::array<char, 24>, kMaxFieldsRead> printed_{};
  std::array<std::string_view, kMaxFieldsRead> names_{};
};

/// One reply of a group: its status, and the reply when it is kOk.
struct GroupReply {
  RedisStatus status = RedisStatus::kUnavailable;
  const RedisReply* reply = nullptr;  ///< never null

  [[nodiscard]] bool is(RedisReply::Type type) const noexcept {
    return status == RedisStatus::kOk && reply->type == type;
  }
};

/// The others' count: the fleet's live requests less this replica's own, never below zero.
std::uint32_t others_of(std::uint64_t fleet, std::uint64_t own) {
  const std::uint64_t others = fleet > own ? fleet - own : 0;
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(others, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

limiter::LimitDecision RedisStore::hybrid_decide(StoreSlot store_slot, PolicyId policy,
                                                 std::string_view key) {
  const Call call = prepare(policy, key, nullptr);
  if (!call.live) {
    return limiter::LimitDecision{.allowed = true};
  }
  Slot* slot = store_slot.index < slots_.size() ? slots_[store_slot.index].get() : nullptr;
  if (slot == nullptr || !slot->hash) {
    // Never connected yet (or no slot): nothing to count the others by.
    set_failing(slot != nullptr ? slot->failing : unslotted_failing_, Outcome::kError);
    return fallback_decision(call, key);
  }
  const JournalKey journal_key{policy.index, (*slot->hash)(key)};
  // Denials are noted too: the key is queued, so the next exchange refreshes the others' count
  // (and, after a failure, finds out whether Redis answers again).
  HybridJournal::Decision noted = slot->journal.decide(journal_key, clock_.now());
  const limiter::LimitDecision d =
      slot->failing.load(std::memory_order_relaxed)
          ? fallback_decision(call, key)
          : fallback_store_.decide_now(call.fallback, key, noted.others());
  noted.admit(d.allowed && !d.unavailable ? 1 : 0);
  return d;
}

void RedisStore::hybrid_inspect(Slot* slot, PolicyId policy, std::string_view key,
                                InspectCompletion completion) {
  const Call call = prepare(policy, key, slot);
  if (!call.live || !slot->hash) {
    std::move(completion).post(fallback_store_.inspect_now(call.fallback, key));
    return;
  }
  // The own count is local; the others' is read from Redis now (pushing nothing): TIME and
  // HGETALL go to one connection, so they are answered in order.
  std::string redis_key = call.redis_key + std::string(kFleetSuffix);
  const HybridShape shape{call.window_ms / std::max<std::uint32_t>(1, call.buckets), call.buckets};
  const JournalKey journal_key{policy.index, (*slot->hash)(key)};
  auto redis_now = std::make_shared<std::optional<std::int64_t>>();
  slot->router->execute(
      redis_key, format_command({"TIME"}),
      [redis_now](const RedisOutcome& outcome) { *redis_now = redis_ms_from(outcome); });
  auto shared = std::make_shared<InspectCompletion>(std::move(completion));
  slot->router->execute(
      redis_key, format_command({"HGETALL", redis_key}),
      [this, call, shape, journal_key, redis_now, shared,
       key = std::string(key)](const RedisOutcome& outcome) {
        limiter::KeyState state = fallback_store_.inspect_now(call.fallback, key);
        if (*redis_now && outcome.status == RedisStatus::kOk) {
          const std::int64_t live_from = shape.live_from(**redis_now);
          if (const auto fleet = read_fleet_count(outcome.reply, live_from)) {
            state.count += others_of(fleet->live, ledger_.live(journal_key, live_from));
          }
        }
        state.remaining = state.count < state.limit ? state.limit - state.count : 0;
        std::move(*shared).post(state);
      });
}

void RedisStore::arm_sync(Slot& slot) {
  slot.sync_timer->expires_after(std::max<milliseconds>(options_.sync / 2, milliseconds(1)));
  slot.sync_timer->async_wait([this, &slot](const boost::system::error_code& ec) {
    if (ec) {
      return;  // cancelled: the store is stopping, and the slot may be gone
    }
    sync(slot);
    arm_sync(slot);
  });
}

void RedisStore::sync(Slot& slot) {
  struct Target {
    bool live = false;
    std::string name;
    std::uint32_t width_ms = 1;
    std::uint32_t buckets = 1;
  };
  const core::TimePoint now = clock_.now();
  std::vector<Target> targets;
  core::Duration keep_for = options_.sync;
  {
    const std::lock_guard lock(mutex_);
    targets.reserve(policies_.size());
    for (std::size_t i = 0; i < policies_.size(); ++i) {
      const limiter::Policy& p = policies_[i];
      const auto buckets = std::max<std::uint32_t>(1, p.buckets);
      targets.push_back(
          {live_[i], p.name, static_cast<std::uint32_t>(p.window.count()) / buckets, buckets});
      keep_for = std::max<core::Duration>(keep_for, p.window);
    }
  }
  if (now - slot.last_forget >= kForgetEvery) {
    // A key's others' count is worth keeping for a window after its last decision: a returning
    // key starts from it rather than from nothing.
    slot.last_forget = now;
    slot.journal.forget_idle(now, keep_for);
    if (slot.redis_clock) {
      // Own pushes older than the longest window count for no key: one shard per second each.
      const auto since =
          std::chrono::duration_cast<milliseconds>(now - slot.redis_clock->read_at).count();
      const auto keep_ms = std::chrono::duration_cast<milliseconds>(keep_for).count();
      ledger_.forget(slot.forget_shard++, slot.redis_clock->redis_ms + since - keep_ms);
    }
  }
  if (slot.syncing || slot.journal.queued() == 0) {
    return;  // one exchange at a time per thread; a slow one delays the next
  }
  if (!slot.router->ready() || !slot.hash) {
    if (observer_.sync) {
      observer_.sync(0.0, false);
    }
    set_failing(slot.failing, Outcome::kError);
    return;
  }
  std::vector<SyncItem> batch = slot.journal.take_batch(options_.max_sync_batch);
  if (batch.empty()) {
    return;
  }
  // One pipelined group per set of keys of one policy (one shape) and, on a Redis Cluster, one
  // hash slot; the groups are sent one event-loop turn apart, so requests interleave with
  // a large batch's formatting.
  const bool cluster = slot.router->cluster();
  std::vector<SyncKey> keys;
  keys.reserve(batch.size());
  for (const SyncItem& item : batch) {
    if (item.key.policy >= targets.size() || !targets[item.key.policy].live) {
      slot.journal.complete(item, 0);  // a removed policy: nothing to exchange
      continue;
    }
    std::string redis_key = window_key(targets[item.key.policy].name, item.key.hash, kFleetSuffix);
    const std::uint16_t hash_slot = cluster ? cluster_slot(redis_key) : 0;
    keys.push_back({item, hash_slot, std::move(redis_key)});
  }
  const auto by_group = [](const SyncKey& a, const SyncKey& b) {
    return std::tie(a.item.key.policy, a.hash_slot) < std::tie(b.item.key.policy, b.hash_slot);
  };
  if (!std::is_sorted(keys.begin(), keys.end(), by_group)) {
    std::stable_sort(keys.begin(), keys.end(), by_group);  // oldest first within a group
  }
  std::vector<std::vector<SyncKey>> groups;
  for (auto& key : keys) {
    if (groups.empty() || groups.back().size() >= kKeysPerCall ||
        groups.back().front().item.key.policy != key.item.key.policy ||
        groups.back().front().hash_slot != key.hash_slot) {
      groups.emplace_back();
    }
    groups.back().push_back(std::move(key));
  }
  if (groups.empty()) {
    return;
  }
  auto exchange = std::make_shared<Exchange>(Exchange{now, groups.size(), Outcome::kOk});
  slot.syncing = true;
  // Buckets are named on Redis' clock: TIME first, then the groups, each on its own event-loop
  // turn so requests interleave with a large batch's formatting.
  auto all = std::make_shared<std::vector<std::vector<SyncKey>>>(std::move(groups));
  slot.router->execute(
      all->front().front().redis_key, format_command({"TIME"}),
      [this, &slot, exchange, all, targets = std::move(targets)](const RedisOutcome& outcome) {
        const std::optional<std::int64_t> redis_ms = redis_ms_from(outcome);
        if (!redis_ms) {
          // Nothing was pushed: every key's requests go with the next batch.
          for (const auto& group : *all) {
            for (const SyncKey& key : group) {
              slot.journal.complete(key.item, std::nullopt, /*resend=*/true);
            }
          }
          exchange->worst =
              outcome.status == RedisStatus::kTimeout ? Outcome::kTimeout : Outcome::kError;
          exchange->left = 1;
          finish_exchange(slot, exchange);
          return;
        }
        const RedisClock clock{*redis_ms, clock_.now()};
        slot.redis_clock = clock;
        for (auto& group : *all) {
          const Target& target = targets[group.front().item.key.policy];
          const HybridShape shape{target.width_ms, target.buckets};
          boost::asio::post(slot.sync_timer->get_executor(), [this, &slot, exchange, shape, clock,
                                                              group = std::move(group)]() mutable {
            send_group(slot, exchange, shape, clock, std::move(group));
          });
        }
      });
}

void RedisStore::send_group(Slot& slot, const std::shared_ptr<Exchange>& exchange,
                            HybridShape shape, RedisClock clock, std::vector<SyncKey> group) {
  const auto since = std::chrono::duration_cast<milliseconds>(clock_.now() - clock.read_at);
  const std::int64_t now_ms = clock.redis_ms + since.count();
  const std::int64_t bucket = shape.bucket_start(now_ms);
  const std::int64_t live_from = shape.live_from(now_ms);
  // Every key of the group reads buckets among the last kMaxFieldsRead: named once.
  const BucketNames names(bucket, shape.width_ms);
  const std::string_view field = names.name(bucket);
  const std::string ttl = std::to_string(HybridKeyLedger::kExpiryWindows * shape.window_ms() +
                                         std::max<std::int64_t>(shape.width_ms, 1));
  auto state = std::make_shared<GroupExchange>();
  state->bucket = bucket;
  state->live_from = live_from;
  state->keys = std::move(group);
  state->shape = shape;
  // A bucket nobody can still push into is settled: a replica names the bucket from its last
  // TIME (whose reply took up to a command timeout) and its push runs within another timeout,
  // or it timed out (and may be missed, as docs/distributed.md says).
  state->settled_before = shape.bucket_start(now_ms - kSettleTimeouts * options_.timeout.count());
  // A bucket whose end is `sync_ms` past is held once read: a push lands in it later only from
  // an exchange slower than that, and the read when it settles takes such a push in.
  state->held_before = shape.bucket_start(now_ms - options_.sync.count());
  state->now_ms = now_ms;
  state->at.resize(state->keys.size());
  state->reads.resize(state->keys.size());
  // One pipelined group: per key HINCRBY (with a delta), PEXPIRE (see below), and HGETALL or
  // HMGET; where each key's replies are among the group's.
  std::vector<ReplyIndex>& at = state->at;
  std::string commands;
  // Per key, HINCRBY and a read name the key twice with a few numbers and bucket names (about
  // 2 x (key + 50) bytes); a part read of several buckets and a PEXPIRE add up to 200 more.
  // Sized once for most groups: each growth copies all written so far.
  commands.reserve(state->keys.size() * (2 * state->keys.front().redis_key.size() + 300));
  std::size_t count = 0;
  for (std::size_t i = 0; i < state->keys.size(); ++i) {
    const SyncKey& key = state->keys[i];
    const std::string& redis_key = key.redis_key;
    const HybridKeyLedger::ExchangePlan planned =
        ledger_.plan_exchange(key.item.key, shape, bucket, now_ms, key.item.delta > 0,
                              kMaxFieldsRead, state->settled_before);
    if (key.item.delta > 0) {
      at[i].push = count++;
      append_command(commands, {"HINCRBY", redis_key, field, std::to_string(key.item.delta)});
      if (planned.set_expiry) {
        // Set at most once a window per replica and key, two windows and a bucket long: the
        // hash outlives every push by at least a window and a bucket. One that failed is sent
        // again with the next push.
        at[i].expire = count++;
        append_command(commands, {"PEXPIRE", redis_key, ttl});
      }
    }
    HybridKeyLedger::ReadPlan plan = planned.read;
    if (!plan.whole && !names.covers(plan.from)) {
      plan = {};  // (plan_read names at most kMaxFieldsRead, aligned: never, but read it whole)
    }
    state->reads[i] = plan;
    if (plan.whole) {
      at[i].read = count++;
      append_command(commands, {"HGETALL", redis_key});
      continue;
    }
    // A part read ends at the current bucket (plan_read counts its fields up to `bucket`). When
    // this exchange pushes into it, HINCRBY's reply is the fleet's count there, so only the
    // buckets before it are read; often none, and the key costs Redis one command.
    const std::size_t read_fields = plan.fields - (key.item.delta > 0 ? 1 : 0);
    if (read_fields == 0) {
      continue;
    }
    at[i].read = count++;
    std::array<std::string_view, 2 + kMaxFieldsRead> command{"HMGET", redis_key};
    for (std::size_t f = 0; f < read_fields; ++f) {
      command[2 + f] = names.name(plan.from + static_cast<std::int64_t>(f) * shape.width_ms);
    }
    append_command(commands, std::span<const std::string_view>(command.data(), 2 + read_fields));
  }
  slot.router->execute_group(
      state->keys.front().redis_key, std::move(commands), count,
      [this, &slot, exchange, state](RedisStatus status, std::vector<RedisReply> replies) {
        state->status = status;
        state->replies = std::move(replies);
        finish_group(slot, exchange, *state);
      });
}

void RedisStore::finish_group(Slot& slot, const std::shared_ptr<Exchange>& exchange,
                              GroupExchange& group) {
  Outcome result = Outcome::kOk;
  const auto worse = [&result](RedisStatus status) {
    if (status == RedisStatus::kTimeout) {
      result = Outcome::kTimeout;
    } else if (result == Outcome::kOk) {
      result = Outcome::kError;
    }
  };
  // Reply `index` (ReplyIndex::kNotSent: a command not sent): kUnavailable for one missing
  // from an answered group, the group's status when it failed.
  const auto reply_at = [&group](std::size_t index) -> GroupReply {
    static const RedisReply no_reply;
    const bool ok = group.status == RedisStatus::kOk;
    if (ok && index < group.replies.size()) {
      return {RedisStatus::kOk, &group.replies[index]};
    }
    return {ok || index == ReplyIndex::kNotSent ? RedisStatus::kUnavailable : group.status,
            &no_reply};
  };
  std::string deletions;
  std::size_t deleted = 0;
  for (std::size_t i = 0; i < group.keys.size(); ++i) {
    const SyncKey& key = group.keys[i];
    const GroupReply push = reply_at(group.at[i].push);
    const bool pushed = key.item.delta == 0 || push.is(RedisReply::Type::kInteger);
    const std::optional<std::int64_t> expiry_set =
        reply_at(group.at[i].expire).is(RedisReply::Type::kInteger) ? std::optional(group.now_ms)
                                                                    : std::nullopt;
    if (!pushed) {
      if (push.status == RedisStatus::kOk) {
        log_->warn("redis sync push error: {}",
                   push.reply->is_error() ? push.reply->text : "unexpected reply");
      }
      worse(push.status);
      if (expiry_set) {
        ledger_.expiry_set(key.item.key, *expiry_set);
      }
      // A timed-out push may still run in Redis: only one that cannot have run is resent (and
      // one that may have run is not counted as this replica's: the others' count errs high).
      slot.journal.complete(key.item, std::nullopt, push.status != RedisStatus::kTimeout);
      continue;
    }
    // The push, the TTL and the read go to the ledger in one look-up (settle).
    HybridKeyLedger::Answer answer;
    answer.bucket = group.bucket;
    answer.pushed = key.item.delta;
    answer.live_from = group.live_from;
    answer.settled_before = group.settled_before;
    answer.held_before = group.held_before;
    answer.expiry_set_at = expiry_set;
    answer.plan = group.reads[i];
    const GroupReply read = reply_at(group.at[i].read);
    const HybridKeyLedger::ReadPlan& plan = group.reads[i];
    std::optional<FleetCount> whole;
    std::optional<BucketCounts> counts;
    bool malformed = false;
    if (read.status == RedisStatus::kOk && plan.whole) {
      whole = read_fleet_count(*read.reply, group.live_from);
      malformed = !whole;
      if (whole) {
        answer.whole = &whole->buckets;
      }
    } else if (key.item.delta > 0 || read.status == RedisStatus::kOk) {
      if (key.item.delta == 0) {
        counts = read_bucket_counts(*read.reply, plan.fields);
      } else {
        // The buckets before the current one as read (none when it is the only one not
        // settled), then the current one's count: the HINCRBY reply, an integer (see above).
        counts = plan.fields == 1 ? BucketCounts{}
                 : read.status == RedisStatus::kOk
                     ? read_bucket_counts(*read.reply, plan.fields - 1)
                     : std::nullopt;
        if (counts) {
          counts->push_back(
              static_cast<std::uint64_t>(std::max<std::int64_t>(push.reply->integer, 0)));
        }
      }
      malformed = read.status == RedisStatus::kOk && !counts;
      if (counts) {
        answer.part = std::span<const std::uint64_t>(counts->data(), counts->size());
      }
    }
    std::vector<std::int64_t> left;
    const HybridKeyLedger::Settled settled =
        ledger_.settle(key.item.key, group.shape, answer, left);
    if (malformed) {
      log_->warn("redis sync read error: {}",
                 read.reply->is_error() ? read.reply->text : "unexpected reply");
    }
    if (!settled.fleet) {
      worse(read.status);
      slot.journal.complete(key.item, std::nullopt);
      continue;
    }
    slot.journal.complete(key.item, others_of(*settled.fleet, settled.own));
    std::vector<std::string> dead;
    if (whole) {
      dead = std::move(whole->dead);
    }
    for (const std::int64_t start : left) {
      dead.push_back(std::to_string(start));
    }
    if (!dead.empty()) {
      // Buckets that left the window: gone from the hash, so a key pushed for a long time keeps
      // one window of fields. Whichever replica sees them first deletes them.
      std::vector<std::string_view> command{"HDEL", key.redis_key};
      command.insert(command.end(), dead.begin(), dead.end());
      append_command(deletions, command);
      ++deleted;
    }
  }
  if (deleted > 0) {
    slot.router->execute_group(group.keys.front().redis_key, std::move(deletions), deleted,
                               [](RedisStatus, const std::vector<RedisReply>&) {});
  }
  if (observer_.operation) {
    observer_.operation(result);
  }
  if (result != Outcome::kOk) {
    exchange->worst = result;
  }
  finish_exchange(slot, exchange);
}

void RedisStore::finish_exchange(Slot& slot, const std::shared_ptr<Exchange>& exchange) {
  if (--exchange->left > 0) {
    return;
  }
  slot.syncing = false;
  if (observer_.sync) {
    const std::chrono::duration<double> took = clock_.now() - exchange->started;
    observer_.sync(took.count(), exchange->worst == Outcome::kOk);
  }
  set_failing(slot.failing, exchange->worst);
}

}  // namespace sluice::store
