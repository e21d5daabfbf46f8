// SPDX-License-Identifier: Apache-2.0
// argv -> config -> logging -> app::Gateway::run(); nothing else.
#include <csignal>
#include <exception>
#include <iostream>
#include <span>

#include "gateway/allocator/allocator_info.hpp"
#include "gateway/app/check_command.hpp"
#include "gateway/app/command_line.hpp"
#include "gateway/app/gateway.hpp"
#include "gateway/app/replay_command.hpp"
#include "gateway/config/config_document.hpp"
#include "gateway/log/logging.hpp"

int main(int argc, char** argv) {
  using namespace sluice;
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout or socket is an error value, not a signal
  const auto parsed = app::parse_command_line(
      std::span<const char* const>(const_cast<const char* const*>(argv), argc));
  if (!parsed.command_line) {
    std::cerr << "sluice: " << parsed.error << '\n' << app::usage();
    return 1;
  }
  const app::CommandLine& cl = *parsed.command_line;
  if (cl.help) {
    std::cout << app::usage();
    return 0;
  }
  if (cl.version) {
    std::cout << "sluice " << SLUICE_VERSION << '\n';
    return 0;
  }
  if (cl.replay) {
    return app::run_replay(*cl.replay, std::cout, std::cerr);
  }
  if (cl.check) {
    return app::run_check(cl, std::cout, std::cerr);
  }
  auto loaded = config::ConfigDocument::from_file(cl.config_path);
  if (!loaded.ok()) {
    for (const auto& problem : loaded.problems) {
      std::cerr << config::to_string(problem) << '\n';
    }
    return 1;  // nothing bound
  }
  log::init(cl.log_level);
  log::get("app")->info("allocator {}", allocator::describe());
  int status = 1;
  try {
    app::Gateway gateway(cl.config_path, std::move(*loaded.document));
    status = gateway.run();
  } catch (const std::exception& e) {
    log::get("app")->error("fatal error={}", e.what());
  }
  log::shutdown();
  return status;
}
