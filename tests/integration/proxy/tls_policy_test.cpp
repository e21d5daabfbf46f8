// SPDX-License-Identifier: Apache-2.0
// The operator's TLS profile and listener safety through the real binary with real clients
// (docs/tls.md, "Operator's profile", "OCSP stapling"): suites, groups and signature algorithms
// asked of `openssl s_client`, ALPN with nothing in common, plain HTTP on the TLS port, OCSP
// stapling from a file and from an `openssl ocsp` responder, GOAWAYs counted, and two
// processes on one port.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/h2_frame.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_command_line.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

/// A port nobody listens on now, for a responder started later, chosen below the kernel's
/// ephemeral range: an ephemeral port (what binding port 0 gives) is also what every outgoing
/// connection of the tests running beside this one takes, so it could be in use by the time
/// the responder binds it ("Address already in use", seen in CI).
std::uint16_t unused_port() {
  unsigned low = 32768;  // the Linux default, when the range cannot be read
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  const unsigned first = low > 12000 ? low - 10000 : 2000;
  const unsigned span = low > first ? low - first : 1000;
  std::mt19937 pick(std::random_device{}());
  boost::asio::io_context ioc;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port = static_cast<std::uint16_t>(first + pick() % span);
    boost::asio::ip::tcp::acceptor probe(ioc);
    const boost::asio::ip::tcp::endpoint at(boost::asio::ip::make_address("127.0.0.1"), port);
    boost::system::error_code ec;
    probe.open(at.protocol(), ec);
    if (!ec) {
      probe.bind(at, ec);
    }
    if (!ec) {
      return port;
    }
  }
  throw std::runtime_error("no free port below the ephemeral range");
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class TlsPolicyTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  std::uint16_t responder_port = unused_port();
  std::string responder_url = "http://127.0.0.1:" + std::to_string(responder_port) + "/";
  TestPki::Issued ecdsa =
      pki.issue_with_ocsp("ecdsa", "ecdsa", {"api.example.test"}, responder_url);
  TestPki::Issued rsa = pki.issue_with_ocsp("rsa", "rsa", {"api.example.test"}, responder_url,
                                            TestPki::Key::kRsa2048);

  TlsPolicyTest() {
    config.erase("listen");
    config["listeners"] = json::array({
        {{"name", "plain"}, {"address", "127.0.0.1"}, {"port", 0}, {"http2", {{"enabled", true}}}},
        {{"name", "secure"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"tls",
          {{"certificates",
            {{{"cert", ecdsa.cert}, {"key", ecdsa.key}}, {{"cert", rsa.cert}, {"key", rsa.key}}}},
           {"alpn", {"h2", "http/1.1"}}}}},
    });
  }

  /// `openssl s_client` on the secure listener with `args`, for api.example.test.
  static ProcessResult ask(std::uint16_t port, std::vector<std::string> args) {
    args.insert(args.end(), {"-servername", "api.example.test"});
    return s_client(port, args);
  }
};

TEST_F(TlsPolicyTest, TheDefaultsRefuseCbcStaticRsaAndWeakGroupsAndServeBothKeyTypes) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  for (const char* weak :
       {"AES128-SHA", "AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA256"}) {
    const ProcessResult r = ask(port, {"-tls1_2", "-cipher", weak});
    EXPECT_TRUE(has(r.out, "Cipher is (NONE)")) << weak << "\n" << r.out;
  }
  for (const char* group : {"P-521", "X448", "ffdhe2048"}) {
    const ProcessResult r = ask(port, {"-tls1_3", "-groups", group});
    EXPECT_TRUE(has(r.out, "Cipher is (NONE)")) << group << "\n" << r.out;
  }
  ProcessResult r = ask(port, {"-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"});
  EXPECT_TRUE(has(r.out, "subject=CN = rsa")) << r.out;
  EXPECT_TRUE(has(r.out, "Cipher is ECDHE-RSA-AES128-GCM-SHA256")) << r.out;
  r = ask(port, {"-tls1_3", "-sigalgs", "rsa_pss_rsae_sha256"});
  EXPECT_TRUE(has(r.out, "subject=CN = rsa")) << r.out;
  r = ask(port, {"-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256"});
  EXPECT_TRUE(has(r.out, "subject=CN = ecdsa")) << r.out;
  r = ask(port, {"-tls1_2", "-groups", "X25519"});  // a P-256 certificate needs P-256 on 1.2
  EXPECT_TRUE(has(r.out, "subject=CN = rsa")) << r.out;
  r = ask(port,
          {"-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"});
  EXPECT_TRUE(has(r.out, "Cipher is TLS_CHACHA20_POLY1305_SHA256")) << "the client's preference";
  // curl, verifying the chain, gets through either way.
  const ProcessResult c = curl_https(port, "api.example.test", pki.ca_cert(), "/ok");
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

TEST_F(TlsPolicyTest, TheOperatorsListsApplyAndAnUnknownNameIsACheckError) {
  config["listeners"][1]["tls"]["ciphers"] = "ECDHE-ECDSA-AES256-GCM-SHA384";
  config["listeners"][1]["tls"]["groups"] = "P-384";
  {
    SluiceProcess gateway(config);
    const std::uint16_t port = gateway.listener_port("secure");
    EXPECT_TRUE(has(ask(port, {"-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"}).out,
                    "Cipher is (NONE)"));
    EXPECT_TRUE(has(ask(port, {"-tls1_2"}).out, "Cipher is ECDHE-ECDSA-AES256-GCM-SHA384"));
    EXPECT_TRUE(has(ask(port, {"-tls1_3", "-groups", "X25519"}).out, "Cipher is (NONE)"));
  }
  config["listeners"][1]["tls"]["groups"] = "P-384:secp999r1";
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess refused(config, options);
  EXPECT_EQ(refused.process().wait_exit(), 1);
  const std::string problem = R"(listeners[1].tls.groups: OpenSSL knows no group "secp999r1")";
  EXPECT_TRUE(has(refused.process().output(), problem)) << refused.process().output();
  const ProcessResult r =
      run_process({SLUICE_BINARY, "--check", "--config", refused.config_path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.out + r.err, problem)) << r.out << r.err;
}

TEST_F(TlsPolicyTest, AnAlpnMismatchGetsNoApplicationProtocol) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  ProcessResult r = ask(port, {"-alpn", "spdy/3"});
  EXPECT_TRUE(has(r.out, "no application protocol")) << r.out;
  r = ask(port, {"-alpn", "spdy/3,http/1.1"});
  EXPECT_TRUE(has(r.out, "ALPN protocol: http/1.1")) << r.out;
}

TEST_F(TlsPolicyTest, PlainHttpOnTheTlsPortGets400AndTheReason) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  for (const std::string request :
       {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nab"}) {
    HttpClient plain(port);
    plain.send_raw(request);
    const std::string answer = plain.read_raw_until_close(milliseconds(3000));
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 Bad Request\r\n")) << answer;
    EXPECT_TRUE(answer.ends_with(R"({"error":"plain_http_on_tls_port"})")) << answer;
    EXPECT_TRUE(has(answer, "Connection: close")) << answer;
  }
  const ProcessResult r = run_process({"/usr/bin/curl", "-sS", "--max-time", "5",
                                       "http://127.0.0.1:" + std::to_string(port) + "/"});
  EXPECT_EQ(r.out, R"({"error":"plain_http_on_tls_port"})") << r.err;
}

TEST_F(TlsPolicyTest, ASecondProcessOnTheSamePortIsRefusedNamingTheListener) {
  SluiceProcess first(config);
  config["listeners"][1]["port"] = first.listener_port("secure");
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess second(config, options);
  EXPECT_EQ(second.process().wait_exit(), 1);
  EXPECT_TRUE(has(second.process().output(), "cannot listen listener=secure"))
      << second.process().output();
  EXPECT_TRUE(has(second.process().output(), "address in use")) << second.process().output();
  // Every handshake still reaches the first.
  for (int i = 0; i < 5; ++i) {
    const ProcessResult r =
        curl_https(first.listener_port("secure"), "api.example.test", pki.ca_cert(), "/ok");
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

TEST_F(TlsPolicyTest, AFileResponseIsStapledAndAFetchedOneFollows) {
  config["listeners"][1]["tls"]["certificates"][0]["ocsp"] = "fetch";
  config["listeners"][1]["tls"]["certificates"][1]["ocsp"] = pki.ocsp_response(rsa, "rsa", 60);
  // No responder yet: the fetch fails, nothing is stapled for the ECDSA certificate.
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("secure");
  ProcessResult r = ask(port, {"-status", "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"});
  EXPECT_TRUE(has(r.out, "Cert Status: good")) << r.out;
  r = ask(port, {"-status", "-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256"});
  EXPECT_TRUE(has(r.out, "OCSP response: no response sent")) << r.out;
  ASSERT_TRUE(wait_until("a failed fetch", [&] {
    return has(gateway.process().output(), "tls ocsp fetch failed");
  })) << gateway.process().output();
  Scrape s = scrape_metrics(gateway);
  EXPECT_EQ(s.value("sluice_tls_ocsp_staple_expiry_timestamp_seconds",
                    {{"listener", "secure"}, {"certificate", "0"}}),
            0);
  EXPECT_GT(s.value("sluice_tls_ocsp_staple_expiry_timestamp_seconds",
                    {{"listener", "secure"}, {"certificate", "1"}}),
            0);
  // The responder comes up; the next fetch (within its first 30 s retry) staples its answer.
  ChildProcess responder({"/usr/bin/openssl", "ocsp", "-index", pki.ocsp_index(), "-port",
                          std::to_string(responder_port), "-rsigner", pki.ca_cert(), "-rkey",
                          pki.ca_key(), "-CA", pki.ca_cert(), "-nmin", "10", "-ignore_err"});
  ASSERT_TRUE(responder.wait_for_line("ACCEPT")) << responder.output();
  ASSERT_TRUE(wait_until(
      "the retried fetch",
      [&] { return has(gateway.process().output(), "tls ocsp staple refreshed listener=secure"); },
      std::chrono::seconds(45)))
      << gateway.process().output();
  r = ask(port, {"-status", "-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256"});
  EXPECT_TRUE(has(r.out, "Cert Status: good")) << r.out;
  EXPECT_TRUE(has(r.out, "subject=CN = ecdsa")) << r.out;
  s = scrape_metrics(gateway);
  EXPECT_GT(s.value("sluice_tls_ocsp_staple_expiry_timestamp_seconds",
                    {{"listener", "secure"}, {"certificate", "0"}}),
            0);
}

TEST_F(TlsPolicyTest, ARevokedCertificateIsNeverStapled) {
  const auto revoked = pki.issue_with_ocsp("revoked", "revoked", {"api.example.test"},
                                           responder_url, TestPki::Key::kEcdsaP256, true);
  config["listeners"][1]["tls"]["certificates"] = {
      {{"cert", revoked.cert}, {"key", revoked.key}, {"ocsp", "fetch"}}};
  ChildProcess responder({"/usr/bin/openssl", "ocsp", "-index", pki.ocsp_index(), "-port",
                          std::to_string(responder_port), "-rsigner", pki.ca_cert(), "-rkey",
                          pki.ca_key(), "-CA", pki.ca_cert(), "-nmin", "10", "-ignore_err"});
  ASSERT_TRUE(responder.wait_for_line("ACCEPT")) << responder.output();
  SluiceProcess gateway(config);
  ASSERT_TRUE(wait_until("a failed fetch", [&] {
    return has(gateway.process().output(), "tls ocsp fetch failed");
  })) << gateway.process().output();
  EXPECT_TRUE(has(gateway.process().output(), "the certificate's status is revoked"))
      << gateway.process().output();
  const ProcessResult r = ask(gateway.listener_port("secure"), {"-status"});
  EXPECT_TRUE(has(r.out, "OCSP response: no response sent")) << r.out;
}

TEST_F(TlsPolicyTest, EveryGoawaySentIsCountedByErrorCode) {
  SluiceProcess gateway(config, SluiceProcess::Options{{"--log-level", "debug"}, {}});
  HttpClient raw(gateway.listener_port("plain"));
  raw.send_raw(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + h2_frame(0x4, 0, 0, "") +
               h2_frame(0x6, 0, 0, std::string(7, 'x')));  // SETTINGS; a PING one byte short
  raw.read_raw_until_close(milliseconds(3000));
  ASSERT_TRUE(wait_until("the GOAWAY counted", [&] {
    return scrape_metrics(gateway).value("sluice_http2_goaways_total",
                                         {{"listener", "plain"}, {"error", "frame_size_error"}}) ==
           1;
  }));
  // The log line may reach the test's reader after the metric is scraped.
  std::string line;
  EXPECT_TRUE(
      gateway.process().wait_for_line("http2 goaway sent listener=plain", kDefaultTimeout, &line))
      << gateway.process().output();
  EXPECT_TRUE(has(line, "error=frame_size_error")) << line;
}

}  // namespace
}  // namespace sluice::testing
