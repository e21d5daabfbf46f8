// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/fleet_link.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <utility>

#include "gateway/config/json_members.hpp"

namespace sluice::app {
namespace {

using Kind = admin::CommitError::Kind;

/// A writer that lost the race waits a moment (up to this, times its attempt, at random)
/// before trying again, so writers on several replicas stop colliding in step.
constexpr std::chrono::milliseconds kRetryPause{2};
/// A writer that lost this many times asks for the fleet's write turn with its next write
/// (fleet_store.hpp): rare enough that writers rarely wait on each other, soon enough that
/// none loses for long.
constexpr int kTurnAfterLosses = 3;

fleet::FleetVersion version_of(const config::ConfigDocument& document, std::string replica) {
  return {0, fleet::dump_shared_part(document.json()), std::move(replica), fleet::wall_ms()};
}

}  // namespace

fleet::FleetRedis::Options fleet_redis_options(const config::Config& config) {
  fleet::FleetRedis::Options options;
  options.host = config.store.redis.host;
  options.port = config.store.redis.port;
  if (config.store.redis.password_env) {
    if (const char* password = std::getenv(config.store.redis.password_env->c_str())) {  // NOLINT
      options.password = password;
    }
  }
  options.timeout = config.fleet.sync_timeout;
  return options;
}

FleetLink::FleetLink(const config::Config& config, metrics::Metrics& metrics, Wake wake,
                     std::shared_ptr<spdlog::logger> log)
    : config_(config.fleet),
      replica_id_(fleet::replica_id_for(config.fleet)),
      wake_(std::move(wake)),
      redis_(fleet_redis_options(config)),
      store_(redis_, config.fleet.name),
      metrics_(metrics.registry()),
      sync_(fleet_redis_options(config), config.fleet, replica_id_,
            {.apply =
                 [this](fleet::FleetVersion version, bool authoritative) {
                   if (inbox_.put_version(std::move(version), authoritative)) {
                     wake_();
                   }
                 },
             .events =
                 [this](std::vector<fleet::FleetEvent> events) {
                   if (inbox_.put_events(std::move(events))) {
                     wake_();
                   }
                 },
             .drained =
                 [this](fleet::DrainedEndpoints drained) {
                   if (inbox_.put_drained(std::move(drained))) {
                     wake_();
                   }
                 }},
            log),
      log_(std::move(log)) {}

FleetLink::~FleetLink() {
  stop();
}

std::optional<fleet::FleetVersion> FleetLink::start(const config::ConfigDocument& running) {
  fleet::FleetVersion seed = version_of(running, replica_id_);
  seed.version = 1;
  sync_.applied(0, seed.config);  // what a re-seed offers until a fleet version runs here
  auto taken = store_.take_or_seed(seed, "seed");
  if (taken) {
    log_->info("fleet joined fleet={} replica={} version={} made_by={}", config_.name, replica_id_,
               taken->version, taken->replica);
  } else {
    log_->warn(
        "fleet unavailable at start fleet={} error={}: serving the file's config until Redis "
        "answers",
        config_.name, redis_.error());
  }
  sync_.start();
  return taken;
}

void FleetLink::stop() {
  sync_.stop();
}

std::optional<admin::CommitError> FleetLink::share_draining(const std::string& backend,
                                                            const std::string& endpoint,
                                                            bool draining) {
  if (!store_.set_draining(replica_id_, backend, endpoint, draining)) {
    return admin::CommitError{Kind::kFleetUnavailable, "fleet Redis: " + redis_.error()};
  }
  return std::nullopt;
}

std::optional<fleet::FleetVersion> FleetLink::read_current() {
  return store_.current();
}

std::variant<FleetLink::Written, admin::CommitError> FleetLink::write(
    const config::ConfigDocument& base, config::ConfigDocument next,
    const admin::CommitOptions& options, std::string_view source) {
  // The change as edits, made only when another replica wrote first (most writes are not).
  std::optional<std::vector<fleet::Edit>> edits;
  std::uint64_t expected = options.if_match.value_or(version_);
  // Retried until sync_timeout_ms: under contention every writer gets through, later.
  const auto deadline = std::chrono::steady_clock::now() + config_.sync_timeout;
  std::minstd_rand jitter(static_cast<std::uint32_t>(fleet::wall_ms()));
  int attempt = 1;
  bool turn_ours = false;  // this replica holds the fleet's write turn (fleet_store.hpp)
  const auto give_back = [&] {
    if (turn_ours) {
      (void)store_.release_turn(replica_id_);  // else it ends on its own after kTurnMs
    }
  };
  int losses = 0;
  for (; std::chrono::steady_clock::now() < deadline; ++attempt) {
    fleet::FleetVersion candidate = version_of(next, replica_id_);
    // A writer that lost kTurnAfterLosses times asks for the turn: then its next write is the
    // one the fleet takes.
    const auto outcome = store_.write(expected, candidate, std::string(source), options.summary,
                                      losses >= kTurnAfterLosses && !options.if_match);
    using Result = fleet::WriteOutcome::Result;
    if (outcome.result == Result::kUnavailable) {
      return admin::CommitError{Kind::kFleetUnavailable, "fleet Redis: " + redis_.error()};
    }
    if (outcome.result == Result::kApplied) {
      candidate.version = outcome.version;
      return Written{std::move(next), std::move(candidate)};
    }
    if (outcome.turn_held) {
      // Another replica's turn: it lasts one merge. The same write again, shortly.
      std::this_thread::sleep_for(kRetryPause * (1 + jitter() % 2));
      continue;
    }
    turn_ours = outcome.turn_ours;
    ++losses;
    if (options.if_match) {
      give_back();
      return admin::CommitError{Kind::kVersionMismatch, "the fleet is at another version",
                                outcome.version};
    }
    // Another replica wrote first: carry this change onto what the fleet holds now. The first
    // loss is mostly a version this replica has not applied yet; later ones, unless the turn
    // is ours, pause first (growing, jittered). A pause comes before the read, never between
    // the read and the next compare-and-set: a writer whose window held its pause lost ever
    // more often as the pause grew, for the whole sync_timeout_ms (docs/fleet.md, "Writes").
    if (losses > 1 && !turn_ours) {
      std::this_thread::sleep_for(kRetryPause * (1 + jitter() % attempt));
    }
    const auto current = store_.current();
    if (!current) {
      return admin::CommitError{Kind::kFleetUnavailable, "fleet Redis: " + redis_.error()};
    }
    auto shared = config::parse_ordered(current->config);
    if (!shared.is_object()) {
      shared = fleet::Document::object();
    }
    if (!edits) {
      edits = fleet::shared_edits_between(base.json(), next.json());
    }
    auto merged = config::ConfigDocument::from_json(
        fleet::with_shared(next.json(), fleet::apply_edits(std::move(shared), *edits)));
    if (!merged.ok()) {
      give_back();
      return admin::CommitError{Kind::kFleetConflict,
                                "the change no longer fits fleet version " +
                                    std::to_string(current->version) + ": " +
                                    config::to_string(merged.problems.front())};
    }
    next = std::move(*merged.document);
    expected = current->version;
  }
  give_back();
  return admin::CommitError{Kind::kFleetUnavailable,
                            "other replicas kept writing first for sync_timeout_ms (" +
                                std::to_string(attempt - 1) + " attempts); try again"};
}

void FleetLink::applied(const fleet::FleetVersion& version) {
  version_ = version.version;
  sync_.applied(version.version, version.config);
  metrics_.version().Set(static_cast<double>(version.version));
  // The version taken at start was made before this process: not a propagation to measure.
  if (std::exchange(joined_, true) && version.at_ms > 0) {
    const auto late = std::max<std::int64_t>(0, fleet::wall_ms() - version.at_ms);
    metrics_.sync_seconds().Observe(static_cast<double>(late) / 1000.0);
  }
}

void FleetLink::tick(nlohmann::json heartbeat) {
  sync_.set_heartbeat(std::move(heartbeat));
  metrics_.connected().Set(sync_.connected() ? 1 : 0);
  double ok = 0;
  double lost = 0;
  for (const auto& replica : sync_.replicas()) {
    (replica.value("state", "") == "lost" ? lost : ok) += 1;
  }
  metrics_.replicas(false).Set(ok);
  metrics_.replicas(true).Set(lost);
}

nlohmann::json FleetLink::view() const {
  return {{"name", config_.name},
          {"replica", replica_id_},
          {"version", version_},
          {"connected", sync_.connected()},
          {"replicas", sync_.replicas()}};
}

}  // namespace sluice::app
