// SPDX-License-Identifier: Apache-2.0
#include "gateway/fleet/fleet_store.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>

namespace sluice::fleet {
namespace {

using store::RedisReply;

// KEYS: doc, log, turn. ARGV: expected, config, replica, at_ms, source, summary, claim, turn
// ms. {1, version} when written; {0, current, turn} when not: another replica holds the turn
// (turn = 1), or the fleet moved on (turn = 2 when this replica holds it now, else 0). A
// refused writer that asks (claim = 1) takes the turn when it is free: for `turn ms` no other
// replica's write is taken, so its next one cannot lose; its write gives the turn back. The
// version and its log entry go together.
constexpr std::string_view kWriteScript = R"lua(
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
local turn = redis.call('GET', KEYS[3])
if turn and turn ~= ARGV[3] then return {0, current, 1} end
if current ~= tonumber(ARGV[1]) then
  if turn then return {0, current, 2} end
  if ARGV[7] == '1' then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[8])
    return {0, current, 2}
  end
  return {0, current, 0}
end
local v = current + 1
redis.call('HSET', KEYS[1], 'version', v, 'config', ARGV[2], 'replica', ARGV[3], 'at_ms', ARGV[4])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', 1000, '*', 'version', v, 'replica', ARGV[3],
           'at_ms', ARGV[4], 'source', ARGV[5], 'summary', ARGV[6])
if turn then redis.call('DEL', KEYS[3]) end
return {1, v}
)lua";

// KEYS: doc, log. ARGV: version, config, replica, at_ms, source. Seeds an empty fleet; answers
// the fleet's version either way (HMGET version config replica at_ms).
constexpr std::string_view kSeedScript = R"lua(
if not redis.call('HGET', KEYS[1], 'version') then
  redis.call('HSET', KEYS[1], 'version', ARGV[1], 'config', ARGV[2], 'replica', ARGV[3],
             'at_ms', ARGV[4])
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', 1000, '*', 'version', ARGV[1], 'replica', ARGV[3],
             'at_ms', ARGV[4], 'source', ARGV[5], 'summary', 'seeded')
end
return redis.call('HMGET', KEYS[1], 'version', 'config', 'replica', 'at_ms')
)lua";

template <typename Int>
Int number(std::string_view text) {
  Int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

/// HMGET version config replica at_ms as a version (version 0: none).
FleetVersion version_from(const RedisReply& reply) {
  FleetVersion v;
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() != 4 ||
      reply.elements[0].type != RedisReply::Type::kString) {
    return v;
  }
  v.version = number<std::uint64_t>(reply.elements[0].text);
  v.config = reply.elements[1].text;
  v.replica = reply.elements[2].text;
  v.at_ms = number<std::int64_t>(reply.elements[3].text);
  return v;
}

/// A stream entry [id, [field, value, ...]] as a version.
FleetVersion entry_version(const RedisReply& entry) {
  FleetVersion v;
  if (entry.elements.size() != 2) {
    return v;
  }
  const auto& fields = entry.elements[1].elements;
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& name = fields[i].text;
    const std::string& value = fields[i + 1].text;
    if (name == "version") {
      v.version = number<std::uint64_t>(value);
    } else if (name == "replica") {
      v.replica = value;
    } else if (name == "at_ms") {
      v.at_ms = number<std::int64_t>(value);
    }
  }
  return v;
}

/// A stream entry [id, [field, value, ...]] as an event.
FleetEvent entry_event(const RedisReply& entry) {
  FleetEvent event;
  if (entry.elements.size() != 2) {
    return event;
  }
  const auto& fields = entry.elements[1].elements;
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& name = fields[i].text;
    if (name == "replica") {
      event.replica = fields[i + 1].text;
    } else if (name == "type") {
      event.type = fields[i + 1].text;
    } else if (name == "body") {
      event.body = fields[i + 1].text;
    }
  }
  return event;
}

}  // namespace

FleetStore::FleetStore(FleetRedis& redis, const std::string& fleet_name)
    : redis_(redis),
      doc_("sluice-fleet:{" + fleet_name + "}:doc"),
      log_("sluice-fleet:{" + fleet_name + "}:log"),
      replicas_("sluice-fleet:{" + fleet_name + "}:replicas"),
      top_("sluice-fleet:{" + fleet_name + "}:top"),
      events_("sluice-fleet:{" + fleet_name + "}:events"),
      draining_("sluice-fleet:{" + fleet_name + "}:draining"),
      turn_("sluice-fleet:{" + fleet_name + "}:turn") {}

std::optional<FleetVersion> FleetStore::take_or_seed(const FleetVersion& seed,
                                                     const std::string& source) {
  const auto reply =
      redis_.call({"EVAL", std::string(kSeedScript), "2", doc_, log_, std::to_string(seed.version),
                   seed.config, seed.replica, std::to_string(seed.at_ms), source});
  if (!reply || reply->is_error()) {
    return std::nullopt;
  }
  return version_from(*reply);
}

WriteOutcome FleetStore::write(std::uint64_t expected, const FleetVersion& next,
                               const std::string& source, const std::string& summary,
                               bool claim_turn) {
  const auto reply =
      redis_.call({"EVAL", std::string(kWriteScript), "3", doc_, log_, turn_,
                   std::to_string(expected), next.config, next.replica, std::to_string(next.at_ms),
                   source, summary, claim_turn ? "1" : "0", std::to_string(kTurnMs)});
  if (!reply || reply->type != RedisReply::Type::kArray || reply->elements.size() < 2) {
    return {};
  }
  const bool applied = reply->elements[0].integer == 1;
  const std::int64_t turn = reply->elements.size() > 2 ? reply->elements[2].integer : 0;
  return {applied ? WriteOutcome::Result::kApplied : WriteOutcome::Result::kMismatch,
          static_cast<std::uint64_t>(reply->elements[1].integer), !applied && turn == 1,
          !applied && turn == 2};
}

bool FleetStore::release_turn(const std::string& replica) {
  const auto reply = redis_.call(
      {"EVAL",
       "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
       "return 0",
       "1", turn_, replica});
  return reply && reply->type == RedisReply::Type::kInteger && reply->integer == 1;
}

std::optional<FleetVersion> FleetStore::current() {
  const auto reply = redis_.call({"HMGET", doc_, "version", "config", "replica", "at_ms"});
  if (!reply || reply->is_error()) {
    return std::nullopt;
  }
  return version_from(*reply);
}

std::optional<LogRead> FleetStore::read(LogCursor& cursor, std::chrono::milliseconds block) {
  const auto reply = redis_.call({"XREAD", "COUNT", "100", "BLOCK", std::to_string(block.count()),
                                  "STREAMS", log_, events_, cursor.log_id, cursor.events_id},
                                 block + std::chrono::seconds(1));
  if (!reply || reply->is_error()) {
    return std::nullopt;
  }
  LogRead read;
  // [[stream, [[id, [field, value, ...]], ...]], ...], or nil when nothing came within `block`.
  for (const auto& stream : reply->elements) {
    if (stream.elements.size() != 2) {
      continue;
    }
    const bool is_log = stream.elements[0].text == log_;
    for (const auto& entry : stream.elements[1].elements) {
      if (entry.elements.empty()) {
        continue;
      }
      (is_log ? cursor.log_id : cursor.events_id) = entry.elements[0].text;
      if (is_log) {
        read.versions.push_back(entry_version(entry));
      } else {
        read.events.push_back(entry_event(entry));
      }
    }
  }
  return read;
}

std::optional<LogCursor> FleetStore::newest() {
  LogCursor cursor;
  for (auto* stream : {&log_, &events_}) {
    const auto reply = redis_.call({"XREVRANGE", *stream, "+", "-", "COUNT", "1"});
    if (!reply || reply->is_error()) {
      return std::nullopt;
    }
    const bool empty = reply->elements.empty() || reply->elements[0].elements.empty();
    (stream == &log_ ? cursor.log_id : cursor.events_id) =
        empty ? "0-0" : reply->elements[0].elements[0].text;
  }
  return cursor;
}

bool FleetStore::add_event(const FleetEvent& event) {
  const auto reply = redis_.call({"XADD", events_, "MAXLEN", "~", "1000", "*", "replica",
                                  event.replica, "type", event.type, "body", event.body});
  return reply && !reply->is_error();
}

bool FleetStore::set_draining(const std::string& replica, const std::string& backend,
                              const std::string& endpoint, bool draining) {
  const std::string field = nlohmann::json::array({backend, endpoint}).dump();
  const auto reply = draining ? redis_.call({"HSET", draining_, field, "1"})
                              : redis_.call({"HDEL", draining_, field});
  if (!reply || reply->is_error()) {
    return false;
  }
  const nlohmann::json body = {
      {"backend", backend}, {"endpoint", endpoint}, {"state", draining ? "draining" : "active"}};
  // Without the notice the others still see the change at their next heartbeat.
  (void)add_event({replica, std::string(kDrainEvent), body.dump()});
  return true;
}

std::optional<DrainedEndpoints> FleetStore::draining() {
  const auto fields = all(draining_);
  if (!fields) {
    return std::nullopt;
  }
  DrainedEndpoints drained;
  for (const auto& [field, value] : *fields) {
    const auto pair = nlohmann::json::parse(field, nullptr, false);
    if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
      drained.emplace(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
  }
  return drained;
}

bool FleetStore::put(const std::string& hash, const std::string& replica, const std::string& text) {
  const auto reply = redis_.call({"HSET", hash, replica, text});
  return reply && !reply->is_error();
}

std::optional<std::map<std::string, std::string>> FleetStore::all(const std::string& hash) {
  const auto reply = redis_.call({"HGETALL", hash});
  if (!reply || reply->is_error()) {
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
    out[reply->elements[i].text] = reply->elements[i + 1].text;
  }
  return out;
}

bool FleetStore::heartbeat(const std::string& replica, const std::string& heartbeat) {
  return put(replicas_, replica, heartbeat);
}

std::optional<std::map<std::string, std::string>> FleetStore::replicas() {
  return all(replicas_);
}

bool FleetStore::publish_top(const std::string& replica, const std::string& top) {
  return put(top_, replica, top);
}

std::optional<std::map<std::string, std::string>> FleetStore::published_tops() {
  return all(top_);
}

bool FleetStore::forget(const std::string& replica) {
  const auto heartbeat = redis_.call({"HDEL", replicas_, replica});
  const auto top = redis_.call({"HDEL", top_, replica});
  return heartbeat && !heartbeat->is_error() && top && !top->is_error();
}

}  // namespace sluice::fleet
