// SPDX-License-Identifier: Apache-2.0
// TLS to the backends through the real binary (docs/tls.md "Upstream TLS"). The TLS backend is a
// second sluice with an HTTPS listener in front of a demo backend: a real OpenSSL server whose
// handshakes are counted in its metrics, so pooling is visible.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/admin_client.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class UpstreamTlsTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  TestPki::Issued backend_cert =
      pki.issue("backend", "backend", {"backend.internal.test", "IP:127.0.0.1"});

  /// Starts the TLS backend: HTTPS on an ephemeral port, proxying to the demo backend; with
  /// `client_ca`, it requires a client certificate signed by it.
  void start_tls_backend(const std::optional<std::string>& client_ca = std::nullopt) {
    json inner = minimal_gateway_config({backend.endpoint()});
    inner.erase("listen");
    inner["threads"] = 1;
    inner["http"] = {{"max_body_bytes", std::size_t{1} << 30}};
    json tls = {{"certificates", {{{"cert", backend_cert.cert}, {"key", backend_cert.key}}}}};
    if (client_ca) {
      tls["client_ca"] = *client_ca;
      tls["require_client_cert"] = true;
    }
    inner["listeners"] = {{{"name", "https"}, {"address", "127.0.0.1"}, {"port", 0}, {"tls", tls}}};
    tls_backend = std::make_unique<SluiceProcess>(inner);
    config["threads"] = 1;  // one pool: the reuse below is exact
    config["http"] = {{"max_body_bytes", std::size_t{1} << 30}};
    config["backends"]["demo"]["endpoints"] = {"127.0.0.1:" +
                                               std::to_string(tls_backend->listener_port("https"))};
    config["backends"]["demo"]["tls"] = {
        {"enabled", true}, {"ca", pki.ca_cert()}, {"server_name", "backend.internal.test"}};
  }

  double backend_handshakes() {
    return scrape_metrics(*tls_backend)
        .value("sluice_tls_handshakes_total", {{"listener", "https"}, {"result", "ok"}});
  }

  std::unique_ptr<SluiceProcess> tls_backend;
};

TEST_F(UpstreamTlsTest, RequestsGoOverVerifiedTlsOnPooledConnections) {
  start_tls_backend();
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  for (int i = 0; i < 5; ++i) {
    const json echoed = echoed_request(client, "/headers");
    EXPECT_EQ(echoed["method"], "GET");
  }
  HttpClient other(gateway.proxy_port());
  EXPECT_EQ(other.get("/ok").body(), "ok\n");
  EXPECT_EQ(backend_handshakes(), 1) << "six requests, one TLS connection, pooled";
  // The backend saw a TLS client: the request reached it through its HTTPS listener. It counts a
  // request after answering it, so the last one may be counted after the client has it.
  const Labels ok{{"route", "all"}, {"backend", "demo"}, {"code", "200"}};
  const Scrape inner = scrape_until(
      *tls_backend, "the backend's six requests",
      [&](const Scrape& t) { return t.find("sluice_requests_total", ok).value_or(0) >= 6; });
  EXPECT_EQ(inner.value("sluice_requests_total", ok), 6);
}

TEST_F(UpstreamTlsTest, LargeBodiesStreamBothWaysOverUpstreamTls) {
  start_tls_backend();
  SluiceProcess gateway(config);
  constexpr std::size_t kBytes = std::size_t{16} << 20;
  const StreamResult down = stream_download(
      gateway.proxy_port(), "/bytes/" + std::to_string(kBytes), {}, std::chrono::seconds(60));
  EXPECT_EQ(down.status, 200U) << down.error;
  EXPECT_EQ(down.body_bytes, kBytes);
  EXPECT_TRUE(down.pattern_ok);
  const StreamResult up =
      stream_upload(gateway.proxy_port(), "/count", kBytes, true, {}, std::chrono::seconds(60));
  EXPECT_EQ(up.status, 200U) << up.error;
  EXPECT_EQ(json::parse(up.body_prefix)["bytes"], kBytes) << up.body_prefix;
}

TEST_F(UpstreamTlsTest, AnIpEndpointIsVerifiedByItsAddressWithoutServerName) {
  start_tls_backend();
  config["backends"]["demo"]["tls"].erase("server_name");
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.get("/ok").result_int(), 200);
}

TEST_F(UpstreamTlsTest, AFailedVerificationIs502ConnectErrorWithTheReasonLogged) {
  start_tls_backend();
  config["backends"]["demo"]["tls"]["server_name"] = "someone-else.test";
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  Response res = client.get("/ok");
  EXPECT_EQ(res.result_int(), 502);
  EXPECT_EQ(error_code(res), "upstream_connect_error");
  ASSERT_TRUE(wait_until("the reason is logged", [&] {
    return gateway.process().output().find("upstream tls handshake failed endpoint=127.0.0.1:") !=
           std::string::npos;
  }));
  EXPECT_NE(
      gateway.process().output().find("reason=\"certificate verify failed: hostname mismatch\""),
      std::string::npos)
      << gateway.process().output();
  // Recorded just after the 502 went out (and after the log line): poll, do not race it.
  const Labels connect_error = {{"backend", "demo"}, {"outcome", "connect_error"}};
  const Scrape s = scrape_until(gateway, "the connect error is counted", [&](const Scrape& m) {
    return m.find("sluice_upstream_requests_total", connect_error).value_or(0) >= 1;
  });
  EXPECT_GE(s.value("sluice_upstream_requests_total", connect_error), 1);
}

/// The state of the one endpoint of backend "demo" (GET /admin/backends/demo/endpoints).
std::string endpoint_state(const SluiceProcess& gateway) {
  AdminClient admin(gateway.admin_port());
  return admin.get("/admin/backends/demo/endpoints").body.at("endpoints").at(0).at("state");
}

json fast_checks() {
  return {{"interval_ms", 200},
          {"timeout_ms", 150},
          {"healthy_threshold", 1},
          {"unhealthy_threshold", 1}};
}

// docs/endpoint-health.md "Active checks": over TLS as requests go, with the same verification.
TEST_F(UpstreamTlsTest, HealthChecksGoOverVerifiedTlsAsRequestsDo) {
  start_tls_backend();
  config["backends"]["demo"]["health_check"] = fast_checks();
  SluiceProcess gateway(config);
  // No client traffic at all: what the TLS backend sees are the checks, each a verified
  // handshake and a GET /healthz passed on to the demo backend.
  const Labels ok = {{"route", "all"}, {"backend", "demo"}, {"code", "200"}};
  const Scrape s = scrape_until(*tls_backend, "three checks", [&](const Scrape& t) {
    return t.find("sluice_requests_total", ok).value_or(0) >= 3;
  });
  EXPECT_GE(s.value("sluice_tls_handshakes_total", {{"listener", "https"}, {"result", "ok"}}), 3);
  EXPECT_EQ(endpoint_state(gateway), "healthy");
  set_faults(backend, "health=down");
  ASSERT_TRUE(wait_until("the check's 503 takes it out",
                         [&] { return endpoint_state(gateway) == "unhealthy"; }));
}

TEST_F(UpstreamTlsTest, ACheckThatCannotVerifyTheBackendFails) {
  start_tls_backend();
  config["backends"]["demo"]["tls"]["server_name"] = "someone-else.test";
  config["backends"]["demo"]["health_check"] = fast_checks();
  SluiceProcess gateway(config);
  ASSERT_TRUE(wait_until("the endpoint is unhealthy",
                         [&] { return endpoint_state(gateway) == "unhealthy"; }));
  EXPECT_TRUE(gateway.process().wait_for_line("endpoint unhealthy backend=demo"))
      << gateway.process().output();
}

TEST_F(UpstreamTlsTest, AnotherCasCertificateFailsUnlessVerifyIsOff) {
  start_tls_backend();
  TestPki other_pki;
  config["backends"]["demo"]["tls"]["ca"] = other_pki.ca_cert();
  {
    SluiceProcess gateway(config);
    HttpClient client(gateway.proxy_port());
    EXPECT_EQ(client.get("/ok").result_int(), 502);
    ASSERT_TRUE(wait_until("the reason is logged", [&] {
      return gateway.process().output().find(
                 "certificate verify failed: unable to get local "
                 "issuer certificate") != std::string::npos;
    }));
  }
  config["backends"]["demo"]["tls"]["verify"] = false;
  SluiceProcess gateway(config);
  EXPECT_NE(gateway.process().output().find("backend=demo tls.verify=false"), std::string::npos);
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.get("/ok").result_int(), 200);
}

TEST_F(UpstreamTlsTest, AClientCertificateOpensABackendThatRequiresOne) {
  TestPki clients;
  start_tls_backend(clients.ca_cert());
  {
    SluiceProcess gateway(config);  // no certificate: the backend refuses the handshake
    HttpClient client(gateway.proxy_port());
    EXPECT_EQ(client.get("/ok").result_int(), 502);
  }
  const TestPki::Issued mine = clients.issue("gateway", "sluice-gateway", {});
  config["backends"]["demo"]["tls"]["cert"] = mine.cert;
  config["backends"]["demo"]["tls"]["key"] = mine.key;
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.get("/ok").result_int(), 200);
}

TEST_F(UpstreamTlsTest, AnUnreadableCaStopsTheStartNamingItsField) {
  start_tls_backend();
  config["backends"]["demo"]["tls"]["ca"] = "/nonexistent/ca.pem";
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess gateway(config, options);
  EXPECT_EQ(gateway.process().wait_exit(), 1);
  EXPECT_NE(
      gateway.process().output().find("backends.demo.tls.ca: cannot load /nonexistent/ca.pem"),
      std::string::npos)
      << gateway.process().output();
}

}  // namespace
}  // namespace sluice::testing
