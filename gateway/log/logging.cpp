// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/logging.hpp"

#include <spdlog/async.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <string>

namespace sluice::log {
namespace {

constexpr std::array<std::string_view, 4> kLoggers{"app", "proxy", "admin", "config"};
constexpr std::size_t kQueueSize = 16384;

spdlog::sink_ptr stderr_sink() {
  static const auto sink = [] {
    auto s = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    s->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %n %v");
    return s;
  }();
  return sink;
}

std::shared_ptr<spdlog::logger> make_logger(std::string_view name) {
  auto logger = std::make_shared<spdlog::async_logger>(
      std::string(name), stderr_sink(), spdlog::thread_pool(),
      spdlog::async_overflow_policy::overrun_oldest);
  logger->set_level(spdlog::get_level());
  logger->flush_on(spdlog::level::warn);
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace

void init(std::string_view level) {
  spdlog::init_thread_pool(kQueueSize, 1);
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
  for (const auto name : kLoggers) {
    make_logger(name);
  }
}

std::shared_ptr<spdlog::logger> get(std::string_view name) {
  if (auto logger = spdlog::get(std::string(name))) {
    return logger;
  }
  return make_logger(name);
}

void shutdown() {
  spdlog::shutdown();
}

}  // namespace sluice::log
