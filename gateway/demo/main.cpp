// SPDX-License-Identifier: Apache-2.0
// sluice-demo-backend: argv -> DemoServer -> `listening ADDRESS:PORT` -> serve until SIGTERM.
#include <exception>
#include <iostream>
#include <span>

#include "gateway/demo/demo_options.hpp"
#include "gateway/demo/demo_server.hpp"

int main(int argc, char** argv) {
  using namespace sluice;
  const auto parsed = demo::parse_demo_options(
      std::span<const char* const>(const_cast<const char* const*>(argv), argc));
  if (!parsed.options) {
    std::cerr << "sluice-demo-backend: " << parsed.error << '\n' << demo::demo_usage();
    return 2;
  }
  if (parsed.options->help) {
    std::cout << demo::demo_usage();
    return 0;
  }
  try {
    demo::DemoServer server(*parsed.options);
    std::cout << "listening " << server.endpoint_text() << std::endl;  // flush: tests wait on it
    server.run();
  } catch (const std::exception& e) {
    std::cerr << "sluice-demo-backend: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
