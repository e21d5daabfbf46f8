// SPDX-License-Identifier: Apache-2.0
// Upgrade tunnels through the real binary (docs/upgrades.md): WebSocket to the demo backend's
// /ws/echo and /ws/push with Beast's client, a chat room on python3-websockets (an independent
// implementation on both ends, plain and TLS), the limit on the upgrade request, `upgrades:
// false`, the idle timeout, drain, and memory with a thousand open tunnels.
#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/rss.hpp"
#include "tests/support/sanitized.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// A payload of `size` bytes that is not one byte repeated (a shifted byte shows).
std::string pattern(std::size_t size, bool binary) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    s[i] = binary ? static_cast<char>((i * 131 + 7) & 0xff) : static_cast<char>('a' + i % 26);
  }
  return s;
}

double tunnels_active(const SluiceProcess& gateway) {
  return metric_value(gateway, "sluice_tunnels_active");
}

class UpgradeTest : public ::testing::Test, public ProxyFixtureBase {};

TEST_F(UpgradeTest, TextAndBinaryMessagesFromOneByteTo16MiBEchoThrough) {
  config["http"] = {{"max_body_bytes", 1024}};  // a tunnel is no body: no limit applies
  SluiceProcess gateway(config);
  WsClient ws(gateway.proxy_port(), "/ws/echo", std::chrono::seconds(30));
  EXPECT_EQ(ws.upgrade_response().result_int(), 101);
  for (const std::size_t size :
       {std::size_t{1}, std::size_t{125}, std::size_t{126}, std::size_t{65535}, std::size_t{65536},
        std::size_t{1} << 20, std::size_t{16} << 20}) {
    for (const bool binary : {false, true}) {
      const std::string sent = pattern(size, binary);
      ws.write(sent, binary);
      const WsMessage got = ws.read();
      ASSERT_FALSE(got.error) << size << ": " << got.error.message();
      EXPECT_EQ(got.binary, binary) << size;
      EXPECT_TRUE(got.data == sent) << size << " bytes came back different";
    }
  }
  EXPECT_EQ(tunnels_active(gateway), 1);
  ws.close();
  EXPECT_EQ(ws.close_reason().code, websocket::close_code::normal);
  // The tunnel leaves the gauge before its request is counted.
  const Labels upgraded{{"route", "all"}, {"backend", "demo"}, {"code", "101"}};
  const Scrape closed =
      scrape_until(gateway, "the tunnel closed and counted", [&](const Scrape& s) {
        return s.value("sluice_tunnels_active") == 0 &&
               s.find("sluice_requests_total", upgraded).value_or(0) >= 1;
      });
  EXPECT_EQ(closed.value("sluice_requests_total", upgraded), 1);
  // One access-log line for the tunnel, when it ended, with its bytes both ways.
  std::string line;
  ASSERT_TRUE(gateway.process().wait_for_line(R"("status":101)", kDefaultTimeout, &line))
      << gateway.process().output();
  const json record = json::parse(line);
  EXPECT_GT(record.at("bytes_in").get<double>(), 2.0 * (16 << 20));
  EXPECT_GT(record.at("bytes_out").get<double>(), 2.0 * (16 << 20));
  EXPECT_EQ(record.at("path"), "/ws/echo");
}

TEST_F(UpgradeTest, PingsGetPongsAndTheServerClosingEndsBoth) {
  SluiceProcess gateway(config);
  {
    WsClient ws(gateway.proxy_port(), "/ws/echo");
    ws.ping("are you there");
    ws.write("after the ping", false);
    EXPECT_EQ(ws.read().data, "after the ping");
    ASSERT_FALSE(ws.control_frames().empty());
    EXPECT_EQ(ws.control_frames().front().kind, websocket::frame_type::pong);
    EXPECT_EQ(ws.control_frames().front().payload, "are you there");
  }
  WsClient push(gateway.proxy_port(), "/ws/push?n=3&size=10");
  for (int i = 0; i < 3; ++i) {
    const WsMessage m = push.read();
    ASSERT_FALSE(m.error) << m.error.message();
    EXPECT_EQ(m.data.size(), 10U);
  }
  const WsMessage end = push.read();
  EXPECT_EQ(end.error, websocket::error::closed) << end.error.message();
  EXPECT_EQ(push.close_reason().code, websocket::close_code::normal);
  (void)scrape_until(gateway, "both tunnels are closed",
                     [](const Scrape& s) { return s.value("sluice_tunnels_active") == 0; });
}

TEST_F(UpgradeTest, AnIdleTunnelClosesAfterTunnelIdleTimeout) {
  config["http"] = {{"tunnel_idle_timeout_ms", 400}};
  SluiceProcess gateway(config);
  WsClient ws(gateway.proxy_port(), "/ws/echo", std::chrono::seconds(10));
  ws.write("still here", false);  // traffic keeps it open past the timeout
  std::this_thread::sleep_for(milliseconds(250));
  ws.write("and here", false);
  const auto idle_since = Clock::now();  // the last byte either way is this one's echo
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(ws.read().data, "still here");
  EXPECT_EQ(ws.read().data, "and here");
  const WsMessage cut = ws.read();  // nothing more: the gateway closes the tunnel
  EXPECT_TRUE(cut.error) << "the idle tunnel stayed open";
  EXPECT_LT(Clock::now() - idle_since, std::chrono::seconds(3));
  EXPECT_GE(Clock::now() - idle_since, milliseconds(350));
}

TEST_F(UpgradeTest, TheUpgradeRequestIsLimitedAndAnsweredLikeAnyRequest) {
  config["identity"] = json::array({json{{"client_ip", true}}});
  config["limits"] = {{"p", {{"requests", 1}, {"window_ms", 60000}, {"buckets", 60}}}};
  config["routes"][0]["limit"] = "p";
  SluiceProcess gateway(config);
  WsClient first(gateway.proxy_port(), "/ws/echo");
  EXPECT_FALSE(first.upgrade_response()["RateLimit"].empty());
  try {
    WsClient second(gateway.proxy_port(), "/ws/echo");
    ADD_FAILURE() << "the second upgrade passed the limit";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("429"), std::string::npos) << e.what();
  }
  first.write("the open tunnel is not limited again", false);  // limits apply once
  EXPECT_EQ(first.read().data, "the open tunnel is not limited again");
}

TEST_F(UpgradeTest, UpgradesFalseStripsUpgradeAndAnOrdinaryAnswerKeepsTheConnection) {
  config["routes"] = json::array(
      {json{{"name", "no-ws"}, {"prefix", "/ws"}, {"backend", "demo"}, {"upgrades", false}},
       json{{"name", "all"}, {"prefix", "/"}, {"backend", "demo"}}});
  SluiceProcess gateway(config);
  try {
    WsClient ws(gateway.proxy_port(), "/ws/echo");
    ADD_FAILURE() << "upgraded although the route says upgrades: false";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("426"), std::string::npos) << e.what();  // no Upgrade
  }
  // An upstream that ignores the Upgrade answers as usual, and the connection carries on.
  HttpClient client(gateway.proxy_port());
  const Headers upgrade = {{"Connection", "Upgrade"}, {"Upgrade", "websocket"}};
  const json seen = echoed_request(client, "/headers", upgrade);
  EXPECT_EQ(header_values(seen, "Upgrade"), std::vector<std::string>{"websocket"});
  EXPECT_EQ(header_values(seen, "Connection"), std::vector<std::string>{"Upgrade"});
  EXPECT_EQ(client.get("/ok").result_int(), 200);
  EXPECT_EQ(tunnels_active(gateway), 0);
}

TEST_F(UpgradeTest, DrainCutsTunnelsStillOpenAtDrainTimeout) {
  config["drain_timeout_ms"] = 500;
  SluiceProcess gateway(config);
  WsClient ws(gateway.proxy_port(), "/ws/echo", std::chrono::seconds(10));
  ws.write("before the drain", false);
  EXPECT_EQ(ws.read().data, "before the drain");
  const auto asked = Clock::now();
  ASSERT_TRUE(gateway.process().send_signal(SIGTERM));
  ws.write("during the drain", false);  // still served until drain_timeout_ms
  EXPECT_EQ(ws.read().data, "during the drain");
  const WsMessage cut = ws.read();
  EXPECT_TRUE(cut.error);
  EXPECT_EQ(gateway.process().wait_exit(), 0) << gateway.process().output();
  EXPECT_LT(Clock::now() - asked, std::chrono::seconds(4));
}

TEST_F(UpgradeTest, AChatRoomOnPython3WebsocketsWorksPlainAndOverTls) {
  ChildProcess room({"/usr/bin/python3", SLUICE_SOURCE_DIR "/tests/support/ws_chat.py", "server"});
  std::string line;
  ASSERT_TRUE(room.wait_for_line("port ", kDefaultTimeout, &line)) << room.output();
  const std::string room_endpoint = "127.0.0.1:" + line.substr(line.find(' ') + 1);
  TestPki pki;
  const TestPki::Issued cert = pki.issue("gateway", "localhost", {"localhost", "IP:127.0.0.1"});
  json c = minimal_gateway_config({room_endpoint});
  c.erase("listen");
  c["listeners"] =
      json::array({json{{"name", "http"}, {"address", "127.0.0.1"}, {"port", 0}},
                   json{{"name", "https"},
                        {"address", "127.0.0.1"},
                        {"port", 0},
                        {"tls", {{"certificates", {{{"cert", cert.cert}, {"key", cert.key}}}}}}}});
  SluiceProcess gateway(c);
  const std::string plain = "ws://127.0.0.1:" + std::to_string(gateway.listener_port("http"));
  const std::string tls = "wss://localhost:" + std::to_string(gateway.listener_port("https"));
  for (const auto& [url, extra] :
       {std::pair{plain, std::string()}, std::pair{tls, pki.ca_cert()}}) {
    std::vector<std::string> argv = {"/usr/bin/python3",
                                     SLUICE_SOURCE_DIR "/tests/support/ws_chat.py",
                                     "clients",
                                     url + "/room",
                                     "5",
                                     "20"};
    if (!extra.empty()) {
      argv.push_back(extra);
    }
    const ProcessResult run = run_process(argv, std::chrono::seconds(60));
    EXPECT_EQ(run.exit_code, 0) << url << "\n" << run.out << run.err;
    EXPECT_NE(run.out.find(R"("ok": true)"), std::string::npos) << run.out;
  }
  (void)scrape_until(gateway, "every member left",
                     [](const Scrape& s) { return s.value("sluice_tunnels_active") == 0; });
}

TEST_F(UpgradeTest, AThousandOpenTunnelsCostFlatMemoryEach) {
  config["threads"] = 1;
  config["http"] = {{"max_connections", 5000}};
  SluiceProcess gateway(config);
  std::vector<std::unique_ptr<WsClient>> open;
  const auto open_until = [&](std::size_t n) {
    while (open.size() < n) {
      open.push_back(std::make_unique<WsClient>(gateway.proxy_port(), "/ws/echo"));
      open.back()->write("hi", false);
      ASSERT_EQ(open.back()->read().data, "hi");
    }
  };
  open_until(50);  // warm: pools, contexts and the allocator's first pages
  const std::size_t warm = rss_bytes(gateway.process().pid());
  open_until(500);
  const std::size_t half = rss_bytes(gateway.process().pid());
  open_until(1000);
  const std::size_t full = rss_bytes(gateway.process().pid());
  EXPECT_EQ(tunnels_active(gateway), 1000);
  const double first = static_cast<double>(half - warm) / 450;
  const double second = static_cast<double>(full - half) / 500;
  RecordProperty("bytes_per_tunnel", static_cast<int>(second));
  // Each tunnel holds two small buffers, its request's context and its coroutine frames,
  // whatever came before it (about 18 KiB on 2026-11-25; docs/benchmarks.md "WebSocket").
  if (!kSanitized) {  // (TSan's shadow memory and ASan's redzones make RSS meaningless)
    EXPECT_LT(second, 28.0 * 1024) << "first 450: " << first << " B each, next 500: " << second;
    EXPECT_LT(second, first * 1.5 + 2048) << "memory per tunnel grows with the tunnel count";
  }
  for (auto& ws : open) {
    ws->write("still open", true);
  }
  for (auto& ws : open) {
    EXPECT_EQ(ws->read().data, "still open");
  }
}

}  // namespace
}  // namespace sluice::testing
