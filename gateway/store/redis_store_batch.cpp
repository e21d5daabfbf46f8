// SPDX-License-Identifier: Apache-2.0
// RedisStore under `store.mode: "exact"` (docs/distributed.md, "What happens per request"):
// every decision waits for Redis, and the decisions one thread makes in one turn of its event
// loop go to Redis as one call of the sliding-window script, which decides them one after the
// other (docs/decisions/0030-exact-decisions-batched-per-turn.md). The rest of the store:
// redis_store.cpp.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "gateway/store/redis_cluster_map.hpp"
#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_scripts.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::store {
namespace {

/// Keys per script call: Redis runs one call at a time, so a call's length is every other
/// client's wait (about 6 µs per key).
constexpr std::size_t kMaxKeysPerCall = 64;
/// The exact window of a (policy, key): a string, apart from hybrid mode's `:fleet` hash.
constexpr std::string_view kRingSuffix = ":ring";

}  // namespace

void RedisStore::enqueue(Slot& slot, Pending pending) {
  if (slot.router->cluster()) {
    pending.hash_slot = cluster_slot(pending.call.redis_key);
  }
  slot.batch.push_back(std::move(pending));
  if (slot.flush_posted) {
    return;
  }
  // After the handlers this turn has already queued: every request read in the turn decides
  // in the same call.
  slot.flush_posted = true;
  boost::asio::post(*slot.ioc, [this, &slot] { flush(slot); });
}

void RedisStore::flush(Slot& slot) {
  slot.flush_posted = false;
  std::vector<Pending> batch = std::move(slot.batch);
  slot.batch.clear();
  if (!slot.router->cluster() && batch.size() <= kMaxKeysPerCall) {
    send_batch(slot, std::move(batch), /*eval=*/false);
    return;
  }
  // Every key of one call must be in one hash slot; the order within a slot is kept. (The
  // order is sorted, not the decisions: a Pending cannot be assigned, see its comment.)
  std::vector<std::size_t> order(batch.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&batch](std::size_t a, std::size_t b) {
    return batch[a].hash_slot < batch[b].hash_slot;
  });
  std::vector<Pending> call;
  for (const std::size_t i : order) {
    if (!call.empty() &&
        (call.size() == kMaxKeysPerCall || call.front().hash_slot != batch[i].hash_slot)) {
      send_batch(slot, std::move(call), /*eval=*/false);
      call.clear();  // (moved from)
    }
    call.push_back(std::move(batch[i]));
  }
  send_batch(slot, std::move(call), /*eval=*/false);
}

void RedisStore::send_batch(Slot& slot, std::vector<Pending> batch, bool eval) {
  const auto& script = sliding_window_script();
  // The distinct (limit, window, buckets) of the batch, and each key's index among them.
  struct Shape {
    std::uint32_t limit = 0;
    std::uint32_t window_ms = 0;
    std::uint32_t buckets = 0;
    bool operator==(const Shape&) const = default;
  };
  std::vector<Shape> shapes;
  std::vector<std::string> text;  // the keys and numbers the arguments point into
  text.reserve(batch.size() * 2 + 4);
  text.push_back(std::to_string(batch.size()));
  std::vector<std::size_t> codes;
  codes.reserve(batch.size());
  for (const Pending& p : batch) {
    text.push_back(p.call.redis_key + std::string(kRingSuffix));
    const Shape shape{p.call.limit, p.call.window_ms, p.call.buckets};
    const auto it = std::find(shapes.begin(), shapes.end(), shape);
    codes.push_back(2 * static_cast<std::size_t>(it - shapes.begin()) + (p.counting() ? 1 : 0));
    if (it == shapes.end()) {
      shapes.push_back(shape);
    }
  }
  text.push_back(std::to_string(shapes.size()));
  for (const Shape& shape : shapes) {
    text.push_back(std::to_string(shape.limit));
    text.push_back(std::to_string(shape.window_ms));
    text.push_back(std::to_string(shape.buckets));
  }
  for (const std::size_t code : codes) {
    text.push_back(std::to_string(code));
  }
  std::vector<std::string_view> args;
  args.reserve(text.size() + 2);
  args.emplace_back(eval ? "EVAL" : "EVALSHA");
  args.emplace_back(eval ? script.source : std::string_view(script.sha1));
  args.insert(args.end(), text.begin(), text.end());
  const std::string routing_key = batch.front().call.redis_key;
  auto shared = std::make_shared<std::vector<Pending>>(std::move(batch));
  slot.router->execute(routing_key, format_command(args),
                       [this, &slot, shared, eval](const RedisOutcome& outcome) {
                         if (outcome.status == RedisStatus::kOk && outcome.reply.is_error() &&
                             !eval && outcome.reply.text.starts_with("NOSCRIPT")) {
                           // Redis restarted or was flushed: EVAL sends the script and caches
                           // it again.
                           send_batch(slot, std::move(*shared), /*eval=*/true);
                           return;
                         }
                         finish_batch(slot, *shared, outcome);
                       });
}

void RedisStore::finish_batch(Slot& slot, std::vector<Pending>& batch,
                              const RedisOutcome& outcome) {
  Outcome result = outcome.status == RedisStatus::kOk        ? Outcome::kOk
                   : outcome.status == RedisStatus::kTimeout ? Outcome::kTimeout
                                                             : Outcome::kError;
  if (result == Outcome::kOk && outcome.reply.is_error()) {
    log_->warn("redis script error: {}", outcome.reply.text);
    result = Outcome::kError;
  }
  const std::size_t count = batch.size();
  for (std::size_t i = 0; i < count; ++i) {
    Pending& p = batch[i];
    if (auto* decision = std::get_if<DecisionCompletion>(&p.completion)) {
      auto d = result == Outcome::kOk ? decision_from(outcome.reply, i, count) : std::nullopt;
      // A reply that is not the script's: a bug or a foreign Redis.
      const Outcome o = result == Outcome::kOk && !d ? Outcome::kError : result;
      note(slot.failing, o);
      std::move(*decision).post(d ? *d : fallback_decision(p.call, p.key));
    } else {
      auto& inspection = std::get<InspectCompletion>(p.completion);
      auto state = result == Outcome::kOk ? state_from(outcome.reply, i, count) : std::nullopt;
      std::move(inspection).post(state ? *state : fallback_state(p.call, p.key));
    }
  }
}

}  // namespace sluice::store
