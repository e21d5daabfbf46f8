// SPDX-License-Identifier: Apache-2.0
// Several named listeners side by side (docs/behaviour.md "Configuration", `listeners`): each
// serves the same routes, says its name in the access log, and a reload cannot move them; a
// connection reaches the process with its first bytes unless the listener turns that off.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

/// The access log line with X-Request-Id `id`, parsed (null when it is not there yet).
json logged(const std::filesystem::path& path, const std::string& id) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"request_id\":\"" + id + "\"") != std::string::npos) {
      return json::parse(line);
    }
  }
  return nullptr;
}

class ListenersTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TempDir dir{"sluice-listeners"};
  std::filesystem::path log_path = dir / "access.log";

  ListenersTest() {
    config.erase("listen");
    config["listeners"] = json::array({
        {{"name", "public"}, {"address", "127.0.0.1"}, {"port", 0}},
        {{"name", "internal"}, {"address", "127.0.0.1"}, {"port", 0}},
    });
    config["access_log"] = {{"path", log_path.string()}};
  }
};

TEST_F(ListenersTest, EachListenerServesAndNamesItselfInTheLog) {
  SluiceProcess gateway(config);
  const std::uint16_t public_port = gateway.listener_port("public");
  const std::uint16_t internal_port = gateway.listener_port("internal");
  EXPECT_NE(public_port, internal_port);
  EXPECT_EQ(gateway.proxy_port(), public_port) << "proxy= in the ready line is the first one";
  for (const auto& [name, port] : {std::pair{"public", public_port}, {"internal", internal_port}}) {
    HttpClient client(port);
    const std::string id = std::string("via-") + name;
    ASSERT_EQ(client.get("/ok", {{"X-Request-Id", id}}).result_int(), 200) << name;
    json line;
    ASSERT_TRUE(wait_until(
        "the line of " + id, [&] { return !(line = logged(log_path, id)).is_null(); },
        milliseconds(3000), milliseconds(10)));
    EXPECT_EQ(line["listener"], name);
  }
}

TEST_F(ListenersTest, AReloadThatMovesAListenerSaysItNeedsARestart) {
  SluiceProcess gateway(config);
  const std::uint16_t internal_port = gateway.listener_port("internal");
  json next = config;
  next["listeners"][1]["name"] = "renamed";
  gateway.rewrite_config(next);
  gateway.reload();
  EXPECT_TRUE(gateway.process().wait_for_line("reload ignores field=listeners (needs a restart)"));
  HttpClient client(internal_port);
  EXPECT_EQ(client.get("/ok").result_int(), 200) << "the listener still listens as it was";
}

TEST_F(ListenersTest, AConnectionIsHandedOverWithItsFirstBytesUnlessTheListenerSaysAtOnce) {
  config["listeners"][1]["defer_accept"] = false;
  config["http"]["header_timeout_ms"] = 500;
  SluiceProcess gateway(config);
  const auto open = [&] {
    return scrape_metrics(gateway).value("sluice_downstream_connections", {});
  };
  {
    // "internal" takes a connection at once: counted before it has sent anything.
    HttpClient silent(gateway.listener_port("internal"));
    EXPECT_TRUE(wait_until("the silent connection is counted", [&] { return open() == 1; }));
  }
  ASSERT_TRUE(wait_until("the silent connection is gone", [&] { return open() == 0; }));
  // "public" (the default) leaves it with the kernel until its first bytes arrive...
  HttpClient deferred(gateway.listener_port("public"));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(open(), 0);
  // ...which hand it over, and it is answered as usual.
  EXPECT_EQ(deferred.get("/ok").result_int(), 200);
  // One that never sends is handed over after the deferral (a second, then the kernel's next
  // SYN-ACK) and meets the header timeout like any other.
  HttpClient never(gateway.listener_port("public"));
  EXPECT_TRUE(never.closed_by_peer(milliseconds(8000)));
}

}  // namespace
}  // namespace sluice::testing
