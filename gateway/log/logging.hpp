// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string_view>

namespace sluice::log {

/// Sets up the named loggers (`app`, `proxy`, `admin`, `config`) on stderr, asynchronous on
/// one shared background thread: a full queue drops the oldest message instead of blocking an
/// I/O thread. `level` is a --log-level value. Call once, before any other thread logs.
void init(std::string_view level);

/// The named logger (created by init(); any other name gets a new one on the same sink).
[[nodiscard]] std::shared_ptr<spdlog::logger> get(std::string_view name);

/// Flushes and stops the background thread; loggers must not be used afterwards.
void shutdown();

}  // namespace sluice::log
