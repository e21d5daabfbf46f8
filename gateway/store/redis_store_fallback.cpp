// SPDX-License-Identifier: Apache-2.0
// RedisStore while Redis is away (docs/distributed.md, "When Redis is away"): each
// slot's failing flag and the one store-wide fallback state they add up to (logged and
// reported once each way), the decision `on_error` makes meanwhile, and the live-replica count
// the heartbeat keeps, by which `local_share` divides each limit. The rest of the store:
// redis_store.cpp.
#include <algorithm>
#include <array>
#include <string>

#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_scripts.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::store {
namespace {

constexpr std::string_view kReplicasKey = "sluice:replicas";

}  // namespace

std::atomic<bool>& RedisStore::failing_flag(StoreSlot slot) {
  return slot.index < slots_.size() ? slots_[slot.index]->failing : unslotted_failing_;
}

void RedisStore::note(std::atomic<bool>& failing, Outcome outcome) {
  if (observer_.operation) {
    observer_.operation(outcome);
  }
  set_failing(failing, outcome);
}

void RedisStore::set_failing(std::atomic<bool>& failing, Outcome outcome) {
  const bool failed = outcome != Outcome::kOk;
  if (failing.exchange(failed) == failed) {
    return;  // no change for this slot: every decision but a slot's first after a change
  }
  // One store-wide state for the log line and the gauge: after a restart each thread's
  // connection comes back in its own time, and a flag flipped by whichever thread decided last
  // would log and report a transition on nearly every decision until the last one is back.
  std::lock_guard lock(fallback_mutex_);
  failing_slots_ = failed ? failing_slots_ + 1 : failing_slots_ - 1;
  if (fallback_.exchange(failing_slots_ > 0) == (failing_slots_ > 0)) {
    return;
  }
  if (failed) {
    static constexpr std::array kModes{"local", "local_share", "allow", "deny"};
    log_->warn("redis store unavailable: on_error={} in force ({})",
               kModes[static_cast<std::size_t>(options_.on_error)],
               outcome == Outcome::kTimeout ? "timeout" : "error");
  } else {
    log_->info("redis store answering again: fallback over");
  }
  if (observer_.fallback) {
    observer_.fallback(failed);
  }
}

limiter::LimitDecision RedisStore::fallback_decision(const Call& call, std::string_view key) {
  switch (options_.on_error) {
    case OnError::kLocal:
      return fallback_store_.decide_now(call.fallback, key);
    case OnError::kLocalShare:
      return fallback_store_.decide_now(call.fallback, key, held_for_share(call.limit));
    case OnError::kAllow:
      return limiter::LimitDecision{
          .allowed = true, .limit = call.limit, .remaining = call.limit > 0 ? call.limit - 1 : 0};
    case OnError::kDeny:
      break;
  }
  return limiter::LimitDecision{.allowed = false,
                                .limit = call.limit,
                                .retry_after = std::chrono::seconds(1),
                                .unavailable = true};
}

limiter::KeyState RedisStore::fallback_state(const Call& call, std::string_view key) {
  if (options_.on_error == OnError::kLocal || options_.on_error == OnError::kLocalShare) {
    return fallback_store_.inspect_now(call.fallback, key);
  }
  return limiter::KeyState{.count = 0, .limit = call.limit, .remaining = call.limit};
}

void RedisStore::heartbeat(StoreSlot store_slot) {
  Slot* slot = ready_slot(store_slot);
  if (slot == nullptr) {
    return;  // keep the last count while Redis is away
  }
  const auto ttl = std::to_string(options_.heartbeat_ttl.count());
  slot->router->execute(
      kReplicasKey,
      format_command({"EVALSHA", heartbeat_script().sha1, "1", kReplicasKey, replica_id_, ttl}),
      [this](const RedisOutcome& outcome) {
        if (outcome.status != RedisStatus::kOk ||
            outcome.reply.type != RedisReply::Type::kInteger || outcome.reply.integer < 1) {
          return;
        }
        const auto live = static_cast<std::size_t>(outcome.reply.integer);
        if (live_replicas_.exchange(live) != live) {
          log_->info("redis store live_replicas={}", live);
          rescale_fallback();
        }
      });
}

std::uint32_t RedisStore::held_for_share(std::uint32_t limit) const {
  if (!hybrid() || limit == 0) {
    return 0;  // exact mode: the fallback store's policies are scaled already
  }
  // Hybrid mode's local store counts at the full limit: the other replicas' shares are held.
  const auto n = std::max<std::size_t>(1, live_replicas_.load());
  const auto share = std::max<std::uint32_t>(1U, static_cast<std::uint32_t>(limit / n));
  return limit - share;
}

void RedisStore::rescale_fallback() {
  if (options_.on_error != OnError::kLocalShare) {
    return;
  }
  const std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < policies_.size(); ++i) {
    if (live_[i]) {
      fallback_ids_[i] = fallback_store_.apply(scaled(policies_[i]));
    }
  }
}

}  // namespace sluice::store
