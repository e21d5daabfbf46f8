// SPDX-License-Identifier: Apache-2.0
#include "tests/support/tls_command_line.hpp"

#include <chrono>

namespace sluice::testing {

ProcessResult s_client(std::uint16_t port, const std::vector<std::string>& args,
                       const std::string& input) {
  // s_client ends at the end of its input. The input comes through a shell pipe after a pause,
  // so TLS 1.3's session tickets (sent after the handshake) arrive before it exits.
  std::string command =
      "{ sleep 0.3; printf '" + input +
      "'; } | /usr/bin/openssl s_client -connect 127.0.0.1:" + std::to_string(port);
  for (const auto& a : args) {
    command += " " + a;
  }
  return run_process({"/bin/sh", "-c", command + " 2>&1"}, std::chrono::seconds(20));
}

ProcessResult curl_https(std::uint16_t port, const std::string& host, const std::string& ca,
                         const std::string& path, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{"/usr/bin/curl",
                                "-sS",
                                "--max-time",
                                "10",
                                "--cacert",
                                ca,
                                "--resolve",
                                host + ":" + std::to_string(port) + ":127.0.0.1",
                                "-w",
                                "\n%{http_code} %{http_version}"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("https://" + host + ":" + std::to_string(port) + path);
  return run_process(argv, std::chrono::seconds(20));
}

}  // namespace sluice::testing
