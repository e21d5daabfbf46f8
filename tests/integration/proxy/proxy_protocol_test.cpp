// SPDX-License-Identifier: Apache-2.0
// The PROXY protocol through the real binary (docs/proxy-protocol.md): v1 and v2 headers from a
// trusted and an untrusted peer, broken, oversized, slow and late headers, the carried address
// at the backend, in the access log and as the limit key, and haproxy's send-proxy and
// send-proxy-v2 as a real sender in front of plain and TLS listeners.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_command_line.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// A v2 header: `command` 0x20 LOCAL / 0x21 PROXY, `family` 0x11 TCP4 / 0x21 TCP6 / 0x00,
/// the address block as given, and `tlv` bytes after it.
std::string v2(unsigned char command, unsigned char family, const std::string& addresses,
               const std::string& tlv = {}) {
  std::string h("\r\n\r\n\0\r\nQUIT\n", 12);
  h.push_back(static_cast<char>(command));
  h.push_back(static_cast<char>(family));
  const std::size_t length = addresses.size() + tlv.size();
  h.push_back(static_cast<char>(length >> 8));
  h.push_back(static_cast<char>(length & 0xff));
  return h + addresses + tlv;
}

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (const int v : values) {
    s.push_back(static_cast<char>(v));
  }
  return s;
}

class ProxyProtocolTest : public ::testing::Test, public ProxyFixtureBase {
 protected:
  ProxyProtocolTest() {
    config.erase("listen");
    config["listeners"] = json::array(
        {json{{"name", "edge"}, {"address", "127.0.0.1"}, {"port", 0}, {"proxy_protocol", true}}});
    config["http"] = {{"trusted_proxies", {"127.0.0.1/32"}}, {"header_timeout_ms", 2000}};
  }
  /// What the backend saw of GET /headers sent after `header` on a fresh connection.
  static json through(std::uint16_t port, const std::string& header) {
    HttpClient client(port);
    client.send_raw(header);
    return echoed_request(client, "/headers");
  }
  /// The X-Forwarded-For the backend saw after `header`.
  static std::string forwarded_for(std::uint16_t port, const std::string& header) {
    const auto values = header_values(through(port, header), "X-Forwarded-For");
    return values.empty() ? std::string("(none)") : values.back();
  }
  /// True when the gateway closes the connection without a byte after `header`.
  static bool closed_silently(std::uint16_t port, const std::string& header,
                              milliseconds timeout = kDefaultTimeout) {
    HttpClient client(port);
    client.send_raw(header);
    return client.read_raw_until_close(timeout).empty();
  }
};

TEST_F(ProxyProtocolTest, TheCarriedAddressIsTheClientForEveryVersionAndFamily) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("edge");
  EXPECT_EQ(forwarded_for(port, "PROXY TCP4 203.0.113.7 127.0.0.1 51000 8080\r\n"), "203.0.113.7");
  EXPECT_EQ(forwarded_for(port, "PROXY TCP6 2001:db8::7 ::1 51000 8080\r\n"), "2001:db8::7");
  EXPECT_EQ(forwarded_for(port, "PROXY UNKNOWN\r\n"), "127.0.0.1");  // the balancer's own
  EXPECT_EQ(forwarded_for(port, "PROXY UNKNOWN ffff::1 ::1 1 2\r\n"), "127.0.0.1");
  const std::string v4 = bytes({198, 51, 100, 9, 127, 0, 0, 1, 0xc8, 0x00, 0x1f, 0x90});
  EXPECT_EQ(forwarded_for(port, v2(0x21, 0x11, v4)), "198.51.100.9");
  EXPECT_EQ(forwarded_for(port, v2(0x21, 0x11, v4, bytes({0x04, 0x00, 0x02, 'h', 'i'}))),
            "198.51.100.9");  // a TLV after the addresses is skipped
  std::string v6 = bytes({0x20, 0x01, 0x0d, 0xb8});
  v6.append(11, '\0');
  v6.push_back('\x09');  // 2001:db8::9
  v6.append(15, '\0');
  v6.push_back('\x01');  // ::1
  v6 += bytes({0xc8, 0x00, 0x1f, 0x90});
  EXPECT_EQ(forwarded_for(port, v2(0x21, 0x21, v6)), "2001:db8::9");
  EXPECT_EQ(forwarded_for(port, v2(0x20, 0x00, "")), "127.0.0.1");  // LOCAL: a health check
  // The access log names the carried client.
  std::string line;
  ASSERT_TRUE(
      gateway.process().wait_for_line(R"("client_ip":"198.51.100.9")", kDefaultTimeout, &line))
      << gateway.process().output();
}

TEST_F(ProxyProtocolTest, HeadersFromAnUntrustedPeerOrBrokenOnesAreClosedWithoutAnAnswer) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("edge");
  const std::string get = "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n";
  EXPECT_TRUE(closed_silently(port, get));  // no header at all
  EXPECT_TRUE(closed_silently(port, "PROXY TCP4 203.0.113.7 127.0.0.1 51000\r\n" + get));
  EXPECT_TRUE(closed_silently(port, "PROXY TCP4 203.0.113.7 127.0.0.1 51000 99999\r\n" + get));
  EXPECT_TRUE(closed_silently(port, "PROXY TCP4 2001:db8::7 127.0.0.1 1 2\r\n" + get));
  EXPECT_TRUE(closed_silently(port, "PROXY TCP4 " + std::string(120, '1') + "\r\n"));  // > 107
  EXPECT_TRUE(closed_silently(port, v2(0x21, 0x11, bytes({1, 2, 3}))));  // too short for TCP4
  std::string huge = v2(0x21, 0x11, std::string(12, '\1'));
  huge[14] = '\xff';  // claims 65535 bytes
  huge[15] = '\xff';
  EXPECT_TRUE(closed_silently(port, huge));
  EXPECT_TRUE(closed_silently(port, v2(0x31, 0x11, std::string(12, '\1'))));  // version 3
  {
    HttpClient truncated(port);  // half a header, then the client gives up
    truncated.send_raw("PROXY TCP4 203.0.");
    truncated.stream().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send);
    EXPECT_TRUE(truncated.read_raw_until_close().empty());
  }
  EXPECT_EQ(forwarded_for(port, "PROXY TCP4 203.0.113.8 127.0.0.1 1 2\r\n"), "203.0.113.8");

  // The same header from a peer that is not a trusted proxy: closed, never believed.
  config["http"]["trusted_proxies"] = {"10.0.0.0/8"};
  SluiceProcess strict(config);
  EXPECT_TRUE(
      closed_silently(strict.listener_port("edge"), "PROXY TCP4 203.0.113.7 127.0.0.1 1 2\r\n"));
}

TEST_F(ProxyProtocolTest, ASlowHeaderIsReadByteByByteAndALateOneIsCut) {
  config["http"]["header_timeout_ms"] = 600;
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("edge");
  {
    HttpClient client(port);
    for (const char c : std::string("PROXY TCP4 192.0.2.44 127.0.0.1 1 2\r\n")) {
      client.send_raw(std::string(1, c));
      std::this_thread::sleep_for(milliseconds(5));
    }
    EXPECT_EQ(header_values(echoed_request(client, "/headers"), "X-Forwarded-For").back(),
              "192.0.2.44");
  }
  HttpClient late(port);
  late.send_raw("PROXY TCP4 192.0.2.");
  const auto since = Clock::now();
  EXPECT_TRUE(late.read_raw_until_close().empty());
  EXPECT_GE(Clock::now() - since, milliseconds(450));
  EXPECT_LT(Clock::now() - since, milliseconds(3000));
}

TEST_F(ProxyProtocolTest, LimitsKeyOnTheCarriedClient) {
  config["identity"] = json::array({json{{"client_ip", true}}});
  config["limits"] = {{"p", {{"requests", 1}, {"window_ms", 60000}, {"buckets", 60}}}};
  config["routes"][0]["limit"] = "p";
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("edge");
  const auto status = [&](const std::string& client) {
    HttpClient c(port);
    c.send_raw("PROXY TCP4 " + client + " 127.0.0.1 1 2\r\n");
    return c.get("/ok").result_int();
  };
  EXPECT_EQ(status("203.0.113.1"), 200);
  EXPECT_EQ(status("203.0.113.2"), 200);  // another client behind the same balancer
  EXPECT_EQ(status("203.0.113.1"), 429);
  EXPECT_EQ(status("203.0.113.3"), 200);
}

/// haproxy in TCP mode on 127.0.0.1:`port` in front of `server`, with `send` ("send-proxy" or
/// "send-proxy-v2"), started in the foreground.
ChildProcess start_haproxy(const TempDir& dir, std::uint16_t port, std::uint16_t server,
                           const std::string& send) {
  const std::string cfg = (dir.path() / ("haproxy-" + send + ".cfg")).string();
  std::ofstream(cfg) << "global\n  maxconn 100\ndefaults\n  mode tcp\n  timeout connect 2s\n"
                     << "  timeout client 10s\n  timeout server 10s\n"
                     << "frontend f\n  bind 127.0.0.1:" << port << "\n  default_backend b\n"
                     << "backend b\n  server s 127.0.0.1:" << server << " " << send << "\n";
  return ChildProcess({"/usr/sbin/haproxy", "-db", "-f", cfg});
}

TEST_F(ProxyProtocolTest, HaproxySendProxyAndSendProxyV2CarryTheRealClientPlainAndTls) {
  TestPki pki;
  const TestPki::Issued cert = pki.issue("edge", "localhost", {"localhost"});
  config["listeners"].push_back(
      json{{"name", "edge-tls"},
           {"address", "127.0.0.1"},
           {"port", 0},
           {"proxy_protocol", true},
           {"tls", {{"certificates", {{{"cert", cert.cert}, {"key", cert.key}}}}}}});
  SluiceProcess gateway(config);
  TempDir dir;
  for (const std::string send : {"send-proxy", "send-proxy-v2"}) {
    for (const std::string listener : {"edge", "edge-tls"}) {
      const std::uint16_t port = RawPeer::refused_port();
      ChildProcess haproxy = start_haproxy(dir, port, gateway.listener_port(listener), send);
      ASSERT_TRUE(wait_until("haproxy listens", [&] {
        return !HttpClient::probe_connect(port) || !haproxy.running();
      })) << haproxy.output();
      // The client connects from 127.0.0.2: only the PROXY header can tell the gateway that.
      const std::vector<std::string> extra = {"--interface", "127.0.0.2"};
      ProcessResult r = listener == "edge"
                            ? run_process({"/usr/bin/curl", "-sS", "--interface", "127.0.0.2",
                                           "http://127.0.0.1:" + std::to_string(port) + "/headers"})
                            : curl_https(port, "localhost", pki.ca_cert(), "/headers", extra);
      ASSERT_EQ(r.exit_code, 0) << send << " " << listener << ": " << r.err << haproxy.output();
      const json seen = json::parse(r.out.substr(0, r.out.find('\n')));  // (curl_https adds
                                                                         // a status line)
      EXPECT_EQ(header_values(seen, "X-Forwarded-For"), std::vector<std::string>{"127.0.0.2"})
          << send << " " << listener;
      EXPECT_EQ(header_values(seen, "X-Forwarded-Proto"),
                std::vector<std::string>{listener == "edge" ? "http" : "https"});
    }
  }
}

}  // namespace
}  // namespace sluice::testing
