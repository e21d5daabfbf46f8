// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/check_command.hpp"

#include <ostream>

#include "gateway/config/config_loader.hpp"

namespace sluice::app {

int run_check(const CommandLine& command_line, std::ostream& out, std::ostream& err) {
  const config::LoadResult result = config::load_config_file(command_line.config_path);
  if (result.ok()) {
    out << "config ok\n";
    return 0;
  }
  for (const config::Problem& problem : result.problems) {
    err << config::to_string(problem) << '\n';
  }
  return 1;
}

}  // namespace sluice::app
