// SPDX-License-Identifier: Apache-2.0
// RedisStore under `store.mode: "hybrid"` (docs/distributed.md, "Hybrid mode"): every decision
// is local, in the embedded store at the full limit less what the other replicas hold for the
// key, and each thread exchanges its journal with Redis every `sync / 2`: per key it pushes the
// requests it admitted and reads back the others' count (hybrid_sync_script), one EVALSHA per
// key, all written as one pipelined batch. A failed exchange puts the thread under `on_error`
// until one succeeds; what it admitted meanwhile is pushed with the next batch. The rest of the
// store: redis_store.cpp.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "gateway/store/redis_cluster_map.hpp"
#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_scripts.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::store {
namespace {

using std::chrono::milliseconds;

constexpr core::Duration kForgetEvery = std::chrono::seconds(1);
constexpr std::string_view kSyncSuffix = ":sync";
/// Keys per script call: a call blocks Redis while it runs (a few µs per key).
constexpr std::size_t kKeysPerCall = 128;

/// The other replicas' count of the first key of a sync script's reply, or nullopt for
/// anything else.
std::optional<std::uint32_t> others_from(const RedisOutcome& outcome) {
  if (outcome.status != RedisStatus::kOk || outcome.reply.type != RedisReply::Type::kArray ||
      outcome.reply.elements.empty()) {
    return std::nullopt;
  }
  const RedisReply& first = outcome.reply.elements.front();
  if (first.type != RedisReply::Type::kInteger || first.integer < 0) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(
      std::min<std::int64_t>(first.integer, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

void RedisStore::execute_script(Slot& slot, const RedisScript& script,
                                std::vector<std::string> keys, std::vector<std::string> args,
                                RedisRouter::Handler handler, bool eval) {
  const std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> parts{
      eval ? "EVAL" : "EVALSHA", eval ? script.source : std::string_view(script.sha1), numkeys};
  parts.insert(parts.end(), keys.begin(), keys.end());
  parts.insert(parts.end(), args.begin(), args.end());
  std::string command = format_command(parts);
  const std::string route = keys.front();  // every key of one call is in one hash slot
  slot.router->execute(
      route, std::move(command),
      [this, &slot, &script, keys = std::move(keys), args = std::move(args),
       handler = std::move(handler), eval](RedisOutcome outcome) mutable {
        if (!eval && outcome.status == RedisStatus::kOk && outcome.reply.is_error() &&
            outcome.reply.text.starts_with("NOSCRIPT")) {
          // A flushed script cache: EVAL sends the script and caches it again.
          execute_script(slot, script, std::move(keys), std::move(args), std::move(handler),
                         /*eval=*/true);
          return;
        }
        handler(std::move(outcome));
      });
}

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
  const limiter::LimitDecision d =
      slot->failing.load(std::memory_order_relaxed)
          ? fallback_decision(call, key)
          : fallback_store_.decide_now(call.fallback, key, slot->journal.others(journal_key));
  // Denials are noted too: the key is queued, so the next exchange refreshes the others' count
  // (and, after a failure, finds out whether Redis answers again).
  slot->journal.note(journal_key, d.allowed && !d.unavailable ? 1 : 0, clock_.now());
  return d;
}

void RedisStore::hybrid_inspect(Slot* slot, PolicyId policy, std::string_view key,
                                InspectCompletion completion) {
  const Call call = prepare(policy, key, slot);
  if (!call.live) {
    std::move(completion).post(limiter::KeyState{});
    return;
  }
  // The own count is local; the others' is read from Redis now (pushing nothing).
  std::string redis_key = call.redis_key + std::string(kSyncSuffix);
  const std::uint32_t width_ms = call.window_ms / std::max<std::uint32_t>(1, call.buckets);
  auto shared = std::make_shared<InspectCompletion>(std::move(completion));
  execute_script(*slot, hybrid_sync_script(), {std::move(redis_key)},
                 {replica_id_, std::to_string(width_ms), std::to_string(call.buckets), "0"},
                 [this, call, shared, key = std::string(key)](const RedisOutcome& outcome) {
                   limiter::KeyState state = fallback_store_.inspect_now(call.fallback, key);
                   state.count += others_from(outcome).value_or(0);
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
  // One script call per group of keys of one policy (one shape) and, on a Redis Cluster, one
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
    std::string redis_key =
        window_key(targets[item.key.policy].name, item.key.hash) + std::string(kSyncSuffix);
    const std::uint16_t hash_slot = cluster ? cluster_slot(redis_key) : 0;
    keys.push_back({item, hash_slot, std::move(redis_key)});
  }
  std::sort(keys.begin(), keys.end(), [](const SyncKey& a, const SyncKey& b) {
    return std::tie(a.item.key.policy, a.hash_slot) < std::tie(b.item.key.policy, b.hash_slot);
  });
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
  for (auto& group : groups) {
    const Target& target = targets[group.front().item.key.policy];
    boost::asio::post(slot.sync_timer->get_executor(),
                      [this, &slot, exchange, width = target.width_ms, buckets = target.buckets,
                       group = std::move(group)]() mutable {
                        send_group(slot, exchange, width, buckets, std::move(group));
                      });
  }
}

void RedisStore::send_group(Slot& slot, const std::shared_ptr<Exchange>& exchange,
                            std::uint32_t width_ms, std::uint32_t buckets,
                            std::vector<SyncKey> group) {
  std::vector<std::string> keys;
  std::vector<std::string> args{replica_id_, std::to_string(width_ms), std::to_string(buckets)};
  std::vector<SyncItem> items;
  keys.reserve(group.size());
  args.reserve(3 + group.size());
  items.reserve(group.size());
  for (SyncKey& key : group) {
    keys.push_back(std::move(key.redis_key));
    args.push_back(std::to_string(key.item.delta));
    items.push_back(key.item);
  }
  execute_script(
      slot, hybrid_sync_script(), std::move(keys), std::move(args),
      [this, &slot, exchange, items = std::move(items)](const RedisOutcome& outcome) {
        const bool ok = outcome.status == RedisStatus::kOk &&
                        outcome.reply.type == RedisReply::Type::kArray &&
                        outcome.reply.elements.size() == items.size();
        Outcome result = Outcome::kOk;
        if (!ok) {
          result = outcome.status == RedisStatus::kTimeout ? Outcome::kTimeout : Outcome::kError;
          if (outcome.status == RedisStatus::kOk) {
            log_->warn("redis sync script error: {}",
                       outcome.reply.is_error() ? outcome.reply.text : "unexpected reply");
          }
        }
        for (std::size_t i = 0; i < items.size(); ++i) {
          const RedisReply& r = ok ? outcome.reply.elements[i] : outcome.reply;
          const auto others = ok && r.type == RedisReply::Type::kInteger && r.integer >= 0
                                  ? std::optional(static_cast<std::uint32_t>(std::min<std::int64_t>(
                                        r.integer, std::numeric_limits<std::uint32_t>::max())))
                                  : std::nullopt;
          // A timed-out push may still run in Redis: only one that cannot have run is resent.
          slot.journal.complete(items[i], others, !ok && result == Outcome::kError);
        }
        if (observer_.operation) {
          observer_.operation(result);
        }
        if (result != Outcome::kOk) {
          exchange->worst = result;
        }
        if (--exchange->left > 0) {
          return;
        }
        slot.syncing = false;
        if (observer_.sync) {
          const std::chrono::duration<double> took = clock_.now() - exchange->started;
          observer_.sync(took.count(), exchange->worst == Outcome::kOk);
        }
        set_failing(slot.failing, exchange->worst);
      });
}

}  // namespace sluice::store
