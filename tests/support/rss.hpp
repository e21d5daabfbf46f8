// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace sluice::testing {

/// Resident set size of process `pid` in bytes, from the VmRSS line of /proc/PID/status.
/// Throws std::runtime_error if the process or the line does not exist. Thread-safe.
[[nodiscard]] inline std::size_t rss_bytes(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      std::size_t kib = 0;
      fields >> kib;  // "VmRSS:     12345 kB"
      return kib * 1024;
    }
  }
  throw std::runtime_error("no VmRSS in " + path + " (has the process exited?)");
}

}  // namespace sluice::testing
