// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/store_setup.hpp"

#include <array>
#include <cstdlib>
#include <memory>

#include "gateway/log/logging.hpp"
#include "gateway/store/memory_store.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::app {
namespace {

store::RedisStore::OnError on_error_of(config::OnError mode) {
  switch (mode) {
    case config::OnError::kLocal:
      return store::RedisStore::OnError::kLocal;
    case config::OnError::kAllow:
      return store::RedisStore::OnError::kAllow;
    case config::OnError::kDeny:
      return store::RedisStore::OnError::kDeny;
    case config::OnError::kLocalShare:
      break;
  }
  return store::RedisStore::OnError::kLocalShare;
}

}  // namespace

StoreSetup make_store(const config::StoreConfig& config, const core::Clock& clock,
                      core::Random& random, metrics::Metrics& metrics) {
  StoreSetup setup;
  const std::string_view name = config::to_string(config.type);
  // Indexed by store::RedisStore::Outcome: kOk, kError, kTimeout.
  const std::array<prometheus::Counter*, 3> operations{&metrics.store_operation(name, "ok"),
                                                       &metrics.store_operation(name, "error"),
                                                       &metrics.store_operation(name, "timeout")};
  prometheus::Gauge& fallback = metrics.store_fallback(name);
  fallback.Set(0);
  if (config.type == config::StoreType::kMemory) {
    auto memory = std::make_unique<store::MemoryStore>(
        clock, store::MemoryStore::Options{.max_keys = config.max_keys, .shards = 0});
    // The store counts its decisions per thread; the counter catches up at each scrape (the
    // hook is copied for each scrape, so what was reported lives beside it).
    auto reported = std::make_shared<std::uint64_t>(0);
    metrics.on_scrape([m = memory.get(), ok = operations[0], reported] {
      const std::uint64_t now = m->decisions();
      ok->Increment(static_cast<double>(now - *reported));
      *reported = now;
    });
    setup.store = std::move(memory);
    return setup;
  }
  store::RedisStore::Options options;
  options.host = config.redis.host;
  options.port = config.redis.port;
  options.timeout = config.redis.timeout;
  options.on_error = on_error_of(config.redis.on_error);
  options.max_keys = config.max_keys;
  options.mode = config.redis.mode == config::StoreMode::kHybrid ? store::RedisStore::Mode::kHybrid
                                                                 : store::RedisStore::Mode::kExact;
  options.sync = config.redis.sync;
  if (config.redis.password_env) {
    const char* password = std::getenv(config.redis.password_env->c_str());  // NOLINT
    if (password == nullptr || *password == '\0') {
      setup.error = "store.password_env names " + *config.redis.password_env +
                    ", which is not set: the Redis store cannot authenticate";
    } else {
      options.password = std::string(password);
    }
  }
  store::RedisStore::Observer observer{
      .operation =
          [operations](store::RedisStore::Outcome outcome) {
            operations[static_cast<std::size_t>(outcome)]->Increment();
          },
      .fallback = [&fallback](bool active) { fallback.Set(active ? 1 : 0); },
      .sync = {},
  };
  if (options.mode == store::RedisStore::Mode::kHybrid) {
    // Only a hybrid store has these series: an exact one never syncs.
    observer.sync = [&histogram = metrics.store_sync(name),
                     &errors = metrics.store_sync_errors(name)](double seconds, bool ok) {
      histogram.Observe(seconds);
      if (!ok) {
        errors.Increment();
      }
    };
  }
  auto redis = std::make_unique<store::RedisStore>(clock, random, std::move(options),
                                                   std::move(observer), log::get("store"));
  setup.store = std::move(redis);
  return setup;
}

}  // namespace sluice::app
