// SPDX-License-Identifier: Apache-2.0
#pragma once

// HTTP/2 integration helpers (docs/http2.md): raw frames and a raw h2c client, curl and h2load
// as real clients, and the fixture with h2c, TLS and plain listeners. Tests: http2_test.cpp
// (streams as requests) and http2_protection_test.cpp (what no well-behaved client sends).

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/h2_frame.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/recording_upstream.hpp"
#include "tests/support/rss.hpp"
#include "tests/support/sanitized.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_command_line.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace http2_support {

using nlohmann::json;
using namespace std::chrono_literals;

// ---- clients --------------------------------------------------------------------------------

/// curl with HTTP/2 by prior knowledge: the body, then a line "STATUS HTTP_VERSION".
inline ProcessResult curl_h2c(std::uint16_t port, const std::string& path,
                              const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv{"/usr/bin/curl",
                                "-sS",
                                "--max-time",
                                "60",
                                "--http2-prior-knowledge",
                                "-w",
                                "\n%{http_code} %{http_version}"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("http://127.0.0.1:" + std::to_string(port) + path);
  return run_process(argv, 90s);
}

class Http2Test : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  TestPki::Issued api = pki.issue("api", "api.example.test", {"api.example.test"});

  Http2Test() {
    config.erase("listen");
    config["threads"] = 1;
    config["http"] = {{"idle_timeout_ms", 2000}, {"max_header_bytes", 8192}};
    config["listeners"] = json::array({
        {{"name", "h2c"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"http2", {{"enabled", true}, {"max_stream_resets", 50}}}},
        {{"name", "secure"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"tls",
          {{"certificates", {{{"cert", api.cert}, {"key", api.key}}}},
           {"alpn", {"h2", "http/1.1"}}}}},
        {{"name", "plain"}, {"address", "127.0.0.1"}, {"port", 0}},
    });
  }
};

}  // namespace http2_support
}  // namespace sluice::testing
