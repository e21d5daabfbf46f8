// SPDX-License-Identifier: Apache-2.0
// argv -> config -> (logging -> app::Gateway::run() once the data path exists); nothing else.
#include <iostream>
#include <span>

#include "gateway/app/check_command.hpp"
#include "gateway/app/command_line.hpp"

int main(int argc, char** argv) {
  using namespace sluice;
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
  const int status = app::run_check(cl, std::cout, std::cerr);
  if (status != 0 || cl.check) {
    return status;
  }
  // The config is valid, but this build has no data path yet (it lands with the proxy issue):
  // say so instead of pretending to serve.
  std::cerr << "sluice: this build only validates configs (use --check); the proxy is not "
               "implemented yet\n";
  return 1;
}
