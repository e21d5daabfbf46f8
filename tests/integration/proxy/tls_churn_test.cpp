// SPDX-License-Identifier: Apache-2.0
// Many TLS handshakes through the real binary leave nothing behind (docs/tls.md): 1,000
// connections from several threads at once, finished cleanly, dropped without close_notify, or
// abandoned mid-handshake; afterwards the gateway's open file descriptors are what they were
// and its resident memory is flat.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/rss.hpp"
#include "tests/support/sanitized.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_client.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

std::size_t open_fds(pid_t pid) {
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/fd";
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                                std::filesystem::directory_iterator()));
}

class TlsChurnTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  TestPki::Issued api = pki.issue("api", "api", {"api.example.test"});

  TlsChurnTest() {
    config.erase("listen");
    config["listeners"] = json::array({
        {{"name", "secure"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"tls", {{"certificates", {{{"cert", api.cert}, {"key", api.key}}}}}}},
    });
    config["access_log"]["enabled"] = false;
  }

  /// `count` connections over `threads` threads; connection i finishes cleanly, is dropped
  /// after its answer, or is abandoned inside the handshake, by i % 3. Returns the answers.
  static int churn(std::uint16_t port, int count, int threads, const TlsClient::Options& options) {
    std::atomic<int> answered{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int i = t; i < count; i += threads) {
          try {
            if (i % 3 == 2) {
              HttpClient half(port);  // a ClientHello's first bytes, then gone
              half.send_raw(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
              continue;
            }
            TlsClient client(port, options);
            if (client.get("/ok").result_int() == 200) {
              ++answered;
            }
            if (i % 3 == 0) {
              client.close();  // close_notify; else the socket just goes
            }
          } catch (const std::exception&) {
          }
        }
      });
    }
    for (auto& w : workers) {
      w.join();
    }
    return answered.load();
  }
};

TEST_F(TlsChurnTest, AThousandHandshakesLeaveNoFileDescriptorsOrMemoryBehind) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  const pid_t pid = gateway.process().pid();
  const TlsClient::Options options{"api.example.test", pki.ca_cert()};
  const auto settled = [&] {
    return wait_until("every connection is gone", [&] {
      return scrape_metrics(gateway).value("sluice_downstream_connections", {}) == 0;
    });
  };
  // Warm-up: pools, session tickets, allocator arenas.
  EXPECT_GT(churn(port, 200, 8, options), 120);
  ASSERT_TRUE(settled());
  // Pooled upstream connections are sockets too, and how many there are depends on which
  // workers served the requests: they are counted out.
  const auto idle_upstream = [&] {
    return static_cast<std::size_t>(scrape_metrics(gateway).value(
        "sluice_upstream_connections", {{"backend", "demo"}, {"state", "idle"}}));
  };
  const std::size_t fds = open_fds(pid) - idle_upstream();
  const std::size_t rss = rss_bytes(pid);

  EXPECT_EQ(churn(port, 1000, 8, options), 667) << "every complete handshake was answered";
  ASSERT_TRUE(settled());
  // (Sockets still closing, the scrapes' own admin connections: it may take a moment.)
  std::size_t now_fds = 0;
  // The baseline itself may hold one such transient socket: no more than before is the test.
  EXPECT_TRUE(wait_until("no more descriptors than before",
                         [&] {
                           now_fds = open_fds(pid) - idle_upstream();
                           return now_fds <= fds;
                         }))
      << now_fds << " descriptors, " << fds << " before";
  const Scrape s = scrape_metrics(gateway);
  EXPECT_GE(s.value("sluice_tls_handshakes_total", {{"listener", "secure"}, {"result", "ok"}}),
            667 + 134);
  EXPECT_GE(s.value("sluice_tls_handshakes_total", {{"listener", "secure"}, {"result", "error"}}),
            333);
  const std::size_t grown = rss_bytes(pid);
  std::cout << "rss after warm-up " << rss / 1024 << " KiB, after 1000 handshakes " << grown / 1024
            << " KiB\n";
  if (!kSanitized) {
    EXPECT_LT(grown, rss + rss / 10) << "resident memory grew more than 10%";
  }
}

}  // namespace
}  // namespace sluice::testing
