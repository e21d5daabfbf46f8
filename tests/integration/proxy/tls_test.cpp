// SPDX-License-Identifier: Apache-2.0
// HTTPS listeners through the real binary with real clients, curl and `openssl s_client`
// (docs/tls.md): the certificate chosen by SNI, the version floor, ALPN, X-Forwarded-Proto,
// garbage and a stalled handshake on the TLS port, plain and TLS listeners side by side.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_client.hpp"
#include "tests/support/tls_command_line.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class TlsTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  TestPki::Issued api = pki.issue("api", "api.example.test", {"api.example.test"});
  TestPki::Issued wild =
      pki.issue("wild", "wildcard", {"*.apps.example.test"}, TestPki::Key::kRsa2048);

  TlsTest() {
    config.erase("listen");
    config["http"] = {{"header_timeout_ms", 1000}};
    config["listeners"] = json::array({
        {{"name", "plain"}, {"address", "127.0.0.1"}, {"port", 0}},
        {{"name", "secure"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"tls",
          {{"certificates",
            {{{"cert", api.cert}, {"key", api.key}}, {{"cert", wild.cert}, {"key", wild.key}}}}}}},
    });
  }
};

TEST_F(TlsTest, CurlGetsThroughWithTheCertificateItsNameAsks) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  ProcessResult r = curl_https(port, "api.example.test", pki.ca_cert(), "/headers");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("\n200 1.1")) << r.out;
  const json echoed = json::parse(r.out.substr(0, r.out.rfind('\n')));
  EXPECT_EQ(header_values(echoed, "X-Forwarded-Proto"), std::vector<std::string>{"https"});
  // A one-label wildcard: curl verifies the name against the RSA certificate it was served.
  r = curl_https(port, "shop.apps.example.test", pki.ca_cert(), "/ok");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("\n200 1.1")) << r.out;
  // Two labels are not covered: the default certificate comes, and curl refuses it.
  r = curl_https(port, "a.shop.apps.example.test", pki.ca_cert(), "/ok");
  EXPECT_NE(r.exit_code, 0) << r.out;
  // The plain listener beside it still speaks plain HTTP, with X-Forwarded-Proto http.
  HttpClient plain(gateway.listener_port("plain"));
  const json via_plain = echoed_request(plain, "/headers");
  EXPECT_EQ(header_values(via_plain, "X-Forwarded-Proto"), std::vector<std::string>{"http"});
}

TEST_F(TlsTest, SniChoosesTheCertificateAndAlpnSaysHttp11) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  ProcessResult r = s_client(port, {"-servername", "x.apps.example.test", "-alpn", "h2,http/1.1"});
  EXPECT_NE(r.out.find("subject=CN = wildcard"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ALPN protocol: http/1.1"), std::string::npos) << r.out;
  r = s_client(port, {"-servername", "api.example.test", "-alpn", "h2"});
  EXPECT_NE(r.out.find("no application protocol"), std::string::npos)
      << "h2 is not offered here: nothing in common is refused (RFC 7301)";
  r = s_client(port, {"-servername", "api.example.test"});
  EXPECT_NE(r.out.find("subject=CN = api.example.test"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No ALPN negotiated"), std::string::npos) << "no ALPN: HTTP/1.1";
  r = s_client(port, {"-noservername"});
  EXPECT_NE(r.out.find("subject=CN = api.example.test"), std::string::npos) << "the first";
}

TEST_F(TlsTest, ASessionIsResumedFromItsTicket) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  for (const std::string version : {"-tls1_2", "-tls1_3"}) {
    SCOPED_TRACE(version);
    const std::string session = (pki.dir() / ("session" + version)).string();
    ProcessResult r =
        s_client(port, {version, "-servername", "api.example.test", "-sess_out", session});
    EXPECT_NE(r.out.find("New, TLSv1."), std::string::npos) << r.out;
    r = s_client(port, {version, "-servername", "api.example.test", "-sess_in", session});
    EXPECT_NE(r.out.find("Reused, TLSv1."), std::string::npos) << r.out;
  }
}

// OpenSSL reads ahead (one receive takes every record that has arrived): records it holds
// must be served without waiting for the socket to become readable again, which it never would.
TEST_F(TlsTest, RequestsArrivingTogetherInSeparateRecordsAreAllAnswered) {
  SluiceProcess gateway(config);
  TlsClient client(gateway.listener_port("secure"), {"api.example.test", pki.ca_cert()});
  const std::vector<std::string> targets = {"/ok", "/bytes/100", "/ok", "/bytes/20000", "/ok"};
  const auto responses = client.pipeline(targets);
  ASSERT_EQ(responses.size(), targets.size());
  for (std::size_t i = 0; i < responses.size(); ++i) {
    EXPECT_EQ(responses[i].result_int(), 200) << targets[i];
  }
  EXPECT_EQ(responses[3].body().size(), 20000U);
  EXPECT_EQ(client.get("/ok").result_int(), 200) << "and the connection goes on";
}

TEST_F(TlsTest, LargeBodiesStreamBothWaysOverTls) {
  // Many records, a socket buffer that fills (the writes wait for it), and reads that end
  // mid-record: 32 MiB down and up through the TLS listener.
  config["http"]["max_body_bytes"] = std::size_t{1} << 30;
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  constexpr std::size_t kBytes = std::size_t{32} << 20;
  ProcessResult r =
      curl_https(port, "api.example.test", pki.ca_cert(), "/bytes/" + std::to_string(kBytes),
                 {"-o", "/dev/null", "-w", "%{size_download} "});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with(std::to_string(kBytes) + " ")) << r.out;
  const std::string upload = (pki.dir() / "upload.bin").string();
  r = run_process(
      {"/bin/sh", "-c", "head -c " + std::to_string(kBytes) + " /dev/urandom > " + upload});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = curl_https(port, "api.example.test", pki.ca_cert(), "/count",
                 {"-X", "POST", "--data-binary", "@" + upload});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out.substr(0, r.out.rfind('\n')))["bytes"], kBytes) << r.out;
}

TEST_F(TlsTest, TheVersionFloorRefusesOlderProtocols) {
  config["listeners"][1]["tls"]["min_version"] = "1.3";
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  ProcessResult r = s_client(port, {"-tls1_2", "-servername", "api.example.test"});
  EXPECT_EQ(r.out.find("subject=CN"), std::string::npos) << r.out;
  r = s_client(port, {"-tls1_3", "-servername", "api.example.test"});
  EXPECT_NE(r.out.find("New, TLSv1.3"), std::string::npos) << r.out;
  const Scrape s = scrape_metrics(gateway);
  EXPECT_GE(s.value("sluice_tls_handshakes_total", {{"listener", "secure"}, {"result", "error"}}),
            1);
  EXPECT_GE(s.value("sluice_tls_handshakes_total", {{"listener", "secure"}, {"result", "ok"}}), 1);
  EXPECT_FALSE(s.find("sluice_tls_handshakes_total", {{"listener", "plain"}, {"result", "ok"}}))
      << "a plain listener has no handshakes to count";
}

TEST_F(TlsTest, GarbageAndAStalledHandshakeAreClosedWithinTheHeaderTimeout) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  const auto started = std::chrono::steady_clock::now();
  HttpClient stalled(port);  // connects, sends nothing
  HttpClient garbage(port);
  garbage.send_raw(std::string("\x16\x03\x01\x00\x05zzzzz", 10));  // no ClientHello
  const std::string answer = garbage.read_raw_until_close(milliseconds(3000));
  EXPECT_EQ(answer.find("HTTP/1.1"), std::string::npos) << "no HTTP answer to garbage";
  EXPECT_TRUE(stalled.closed_by_peer(milliseconds(3000)));
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(2500));
  // Nothing else was disturbed.
  const ProcessResult r = curl_https(port, "api.example.test", pki.ca_cert(), "/ok");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(TlsTest, APlainListenerCanRedirectEveryRequestToHttps) {
  config["listeners"][0]["redirect_to_https"] = true;
  SluiceProcess gateway(config);
  const std::uint16_t https = gateway.listener_port("secure");
  HttpClient plain(gateway.listener_port("plain"));
  const Response res = plain.get("/a/b?c=1", {{"Host", "api.example.test:8080"}});
  EXPECT_EQ(res.result_int(), 308);
  EXPECT_EQ(res[http::field::location],
            "https://api.example.test:" + std::to_string(https) + "/a/b?c=1");
  EXPECT_EQ(error_code(res), "redirect_to_https");
  // The connection stays open, and curl follows the redirect to the TLS listener.
  EXPECT_EQ(plain.get("/ok").result_int(), 308);
  const ProcessResult r = run_process(
      {"/usr/bin/curl", "-sS", "-L", "--max-time", "10", "--cacert", pki.ca_cert(), "--resolve",
       "api.example.test:" + std::to_string(gateway.listener_port("plain")) + ":127.0.0.1",
       "--resolve", "api.example.test:" + std::to_string(https) + ":127.0.0.1",
       "http://api.example.test:" + std::to_string(gateway.listener_port("plain")) + "/ok"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

TEST_F(TlsTest, ABadCertificateStopsTheStartNamingItsField) {
  config["listeners"][1]["tls"]["certificates"][0]["key"] = wild.key;
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess gateway(config, options);
  EXPECT_EQ(gateway.process().wait_exit(), 1);
  EXPECT_NE(gateway.process().output().find("listeners[1].tls.certificates[0].key: " + wild.key +
                                            " is not the key of " + api.cert),
            std::string::npos)
      << gateway.process().output();
}

}  // namespace
}  // namespace sluice::testing
