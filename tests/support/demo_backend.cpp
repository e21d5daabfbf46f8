// SPDX-License-Identifier: Apache-2.0
#include "tests/support/demo_backend.hpp"

#include <csignal>
#include <stdexcept>

#include "tests/support/endpoint_text.hpp"

namespace sluice::testing {

DemoBackend::DemoBackend(unsigned threads, std::chrono::milliseconds timeout)
    : process_({SLUICE_DEMO_BACKEND, "--address", "127.0.0.1", "--port", "0", "--threads",
                std::to_string(threads)}) {
  std::string line;
  if (!process_.wait_for_line(OutputStream::kStdout, "listening ", timeout, &line)) {
    throw std::runtime_error("sluice-demo-backend did not print `listening` within " +
                             std::to_string(timeout.count()) + " ms; output:\n" +
                             process_.output());
  }
  const auto port = parse_port(line.substr(line.find("listening ") + 10));
  if (!port) {
    throw std::runtime_error("sluice-demo-backend: cannot parse '" + line + "'");
  }
  port_ = *port;
}

DemoBackend::~DemoBackend() {
  if (process_.send_signal(SIGTERM)) {
    process_.wait_exit(std::chrono::seconds(2));
  }  // ~ChildProcess SIGKILLs what is left
}

std::string DemoBackend::endpoint() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::optional<int> DemoBackend::stop(std::chrono::milliseconds timeout) {
  process_.send_signal(SIGTERM);
  return process_.wait_exit(timeout);
}

}  // namespace sluice::testing
