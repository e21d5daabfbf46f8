// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_store.hpp"

#include <algorithm>
#include <utility>

#include "gateway/core/secure_random.hpp"
#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_scripts.hpp"

namespace sluice::store {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kHashKeyName = "sluice:hash-key";
constexpr core::Duration kFallbackSweepEvery = std::chrono::seconds(10);

}  // namespace

RedisStore::RedisStore(const core::Clock& clock, core::Random& random, Options options,
                       Observer observer, std::shared_ptr<spdlog::logger> log)
    : clock_(clock),
      random_(random),
      options_(std::move(options)),
      observer_(std::move(observer)),
      log_(std::move(log)),
      replica_id_(core::secure_random_hex(8)),
      fallback_store_(clock, MemoryStore::Options{.max_keys = options_.max_keys, .shards = 0}),
      last_sweep_(clock.now()) {}

RedisStore::~RedisStore() {
  stop();
}

std::vector<std::string> RedisStore::setup_commands() const {
  std::vector<std::string> commands;
  if (options_.password) {
    commands.push_back(format_command({"AUTH", *options_.password}));
  }
  commands.push_back(format_command({"SCRIPT", "LOAD", sliding_window_script().source}));
  commands.push_back(format_command({"SCRIPT", "LOAD", heartbeat_script().source}));
  return commands;
}

void RedisStore::read_hash_key(Slot& slot) {
  // The first replica to connect picks the hash key; every other one reads it. Read again on
  // every reconnection: a Redis that lost its data gets a new key (and has no old windows).
  // Until the GET below answers, this thread decides by the fallback (ready_slot() needs the
  // hash): a decision sent now under the key it had would count, in a Redis that lost its
  // data, in a window nobody reads again, and the user would get a fresh allowance twice.
  slot.hash.reset();
  const std::string candidate = core::secure_random_hex(16);
  slot.router->execute(kHashKeyName, format_command({"SET", kHashKeyName, candidate, "NX"}),
                       [](const RedisOutcome&) {});
  slot.router->execute(
      kHashKeyName, format_command({"GET", kHashKeyName}), [this, &slot](RedisOutcome outcome) {
        if (outcome.status != RedisStatus::kOk) {
          return;  // unreachable again: the next ready connection asks again
        }
        auto hash = outcome.reply.type == RedisReply::Type::kString
                        ? hash_from_hex(outcome.reply.text)
                        : std::nullopt;
        if (!hash) {
          log_->error("redis key {} holds no valid hash key; deciding by the fallback",
                      kHashKeyName);
          return;
        }
        slot.hash = hash;
        set_failing(slot.failing, Outcome::kOk);  // this thread decides by Redis again
        // "ready" once every thread's router is up: from then on every decision goes to Redis.
        if (!slot.ever_ready) {
          slot.ever_ready = true;
          if (ready_slots_.fetch_add(1) + 1 == slots_.size()) {
            log_->info(
                "redis store ready host={} port={} mode={} masters={} connections={} "
                "window_script={} replica={}",
                options_.host, options_.port, slot.router->cluster() ? "cluster" : "standalone",
                slot.router->nodes(), slots_.size() * slot.router->nodes(),
                sliding_window_script().sha1, replica_id_);
          }
        }
      });
}

StoreSlot RedisStore::attach(boost::asio::io_context& ioc) {
  auto slot = std::make_unique<Slot>();
  slot->ioc = &ioc;
  Slot* raw = slot.get();
  RedisRouter::Options o;
  o.connection.host = options_.host;
  o.connection.port = options_.port;
  o.connection.timeout = options_.timeout;
  o.connection.connect_timeout = std::max<milliseconds>(options_.timeout * 4, milliseconds(500));
  o.connection.setup = [this] { return setup_commands(); };
  o.on_ready = [this, raw] { read_hash_key(*raw); };
  slot->router = std::make_shared<RedisRouter>(ioc, std::move(o), clock_, random_, log_);
  if (hybrid()) {
    slot->sync_timer = std::make_unique<boost::asio::steady_timer>(ioc);
  }
  slots_.push_back(std::move(slot));
  return StoreSlot{static_cast<std::uint32_t>(slots_.size() - 1)};
}

void RedisStore::tick(StoreSlot slot) {
  heartbeat(slot);
  const core::TimePoint now = clock_.now();
  if (now - last_sweep_ >= kFallbackSweepEvery) {
    last_sweep_ = now;
    fallback_store_.sweep_idle();
  }
}

void RedisStore::start() {
  for (auto& slot : slots_) {
    slot->router->start();
    if (slot->sync_timer) {
      arm_sync(*slot);
    }
  }
}

void RedisStore::stop() {
  for (auto& slot : slots_) {
    if (slot->sync_timer) {
      slot->sync_timer->cancel();
    }
    slot->router->close();
    slot->batch.clear();  // the threads have stopped: nobody waits for these any more
  }
  slots_.clear();
}

RedisStore::Slot* RedisStore::ready_slot(StoreSlot slot) const {
  if (slot.index >= slots_.size()) {
    return nullptr;
  }
  Slot* s = slots_[slot.index].get();
  return s->router->ready() && s->hash ? s : nullptr;
}

limiter::Policy RedisStore::scaled(const limiter::Policy& policy) const {
  if (options_.on_error != OnError::kLocalShare || hybrid()) {
    return policy;  // hybrid mode's local store counts at the full limit (see held_for_share)
  }
  // Each of N live replicas enforces limit / N (at least 1 unless the limit is 0), so together
  // they stay near the global limit while Redis is away.
  const auto share = [n = std::max<std::size_t>(1, live_replicas_.load())](std::uint32_t limit) {
    return limit == 0 ? 0U : std::max<std::uint32_t>(1U, static_cast<std::uint32_t>(limit / n));
  };
  limiter::Policy out = policy;
  out.requests = share(policy.requests);
  for (auto& [key, requests] : out.overrides) {
    requests = share(requests);
  }
  return out;
}

PolicyId RedisStore::apply(const limiter::Policy& policy) {
  const std::lock_guard lock(mutex_);
  const auto [it, inserted] =
      ids_.try_emplace(policy.name, static_cast<std::uint32_t>(policies_.size()));
  const std::uint32_t index = it->second;
  const PolicyId fallback = fallback_store_.apply(scaled(policy));
  if (inserted) {
    policies_.push_back(policy);
    live_.push_back(true);
    fallback_ids_.push_back(fallback);
  } else {
    policies_[index] = policy;
    live_[index] = true;
    fallback_ids_[index] = fallback;
  }
  return PolicyId{index};
}

bool RedisStore::remove(std::string_view name) {
  const std::lock_guard lock(mutex_);
  const auto it = ids_.find(name);
  if (it == ids_.end() || !live_[it->second]) {
    return false;
  }
  live_[it->second] = false;
  fallback_store_.remove(name);
  return true;  // the counts in Redis expire by themselves within a window
}

std::optional<PolicyId> RedisStore::find(std::string_view name) const {
  const std::lock_guard lock(mutex_);
  const auto it = ids_.find(name);
  if (it == ids_.end() || !live_[it->second]) {
    return std::nullopt;
  }
  return PolicyId{it->second};
}

RedisStore::Call RedisStore::prepare(PolicyId policy, std::string_view key,
                                     const Slot* slot) const {
  Call call;
  {
    const std::lock_guard lock(mutex_);
    if (policy.index >= policies_.size() || !live_[policy.index]) {
      return call;  // a removed policy admits
    }
    const limiter::Policy& p = policies_[policy.index];
    call.live = true;
    const auto override_it = p.overrides.find(key);
    call.limit = override_it != p.overrides.end() ? override_it->second : p.requests;
    call.window_ms = static_cast<std::uint32_t>(p.window.count());
    call.buckets = p.buckets;
    call.fallback = fallback_ids_[policy.index];
    if (slot != nullptr) {
      call.redis_key = window_key(p.name, (*slot->hash)(key));
    }
  }
  return call;
}

std::optional<limiter::LimitDecision> RedisStore::try_decide(StoreSlot store_slot, PolicyId policy,
                                                             std::string_view key) {
  if (hybrid()) {
    return hybrid_decide(store_slot, policy, key);
  }
  Slot* slot = ready_slot(store_slot);
  const Call call = prepare(policy, key, slot);
  if (!call.live) {
    return limiter::LimitDecision{.allowed = true};
  }
  if (slot == nullptr) {
    note(failing_flag(store_slot), Outcome::kError);  // not connected: never wait on Redis
    return fallback_decision(call, key);
  }
  return std::nullopt;
}

void RedisStore::async_decide(StoreSlot store_slot, PolicyId policy, std::string_view key,
                              DecisionCompletion completion) {
  if (hybrid()) {
    std::move(completion).post(hybrid_decide(store_slot, policy, key));
    return;
  }
  Slot* slot = ready_slot(store_slot);
  const Call call = prepare(policy, key, slot);
  if (!call.live) {
    std::move(completion).post(limiter::LimitDecision{.allowed = true});
    return;
  }
  if (slot == nullptr) {
    note(failing_flag(store_slot), Outcome::kError);
    std::move(completion).post(fallback_decision(call, key));
    return;
  }
  enqueue(*slot, Pending(call, std::string(key), std::move(completion)));
}

std::optional<limiter::KeyState> RedisStore::try_inspect(StoreSlot store_slot, PolicyId policy,
                                                         std::string_view key) {
  Slot* slot = ready_slot(store_slot);
  const Call call = prepare(policy, key, slot);
  if (!call.live) {
    return limiter::KeyState{};
  }
  if (hybrid() && slot != nullptr) {
    return std::nullopt;  // the others' count is read from Redis (hybrid_inspect)
  }
  return slot == nullptr ? std::optional(fallback_state(call, key)) : std::nullopt;
}

void RedisStore::async_inspect(StoreSlot store_slot, PolicyId policy, std::string_view key,
                               InspectCompletion completion) {
  Slot* slot = ready_slot(store_slot);
  if (hybrid() && slot != nullptr) {
    hybrid_inspect(slot, policy, key, std::move(completion));
    return;
  }
  const Call call = prepare(policy, key, slot);
  if (!call.live || slot == nullptr) {
    std::move(completion).post(call.live ? fallback_state(call, key) : limiter::KeyState{});
    return;
  }
  enqueue(*slot, Pending(call, std::string(key), std::move(completion)));
}

std::size_t RedisStore::tracked_keys(PolicyId policy) const {
  PolicyId fallback;
  {
    const std::lock_guard lock(mutex_);
    if (policy.index >= fallback_ids_.size()) {
      return 0;
    }
    fallback = fallback_ids_[policy.index];
  }
  return fallback_store_.tracked_keys(fallback);
}

}  // namespace sluice::store
