// SPDX-License-Identifier: Apache-2.0
// Several named listeners side by side (docs/behaviour.md "Configuration", `listeners`): each
// serves the same routes, says its name in the access log, and a reload cannot move them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/proxy/proxy_fixture.hpp"
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

}  // namespace
}  // namespace sluice::testing
