// SPDX-License-Identifier: Apache-2.0
// HTTP/2 downstream through the real binary (docs/http2.md), with real clients: curl
// (--http2 over TLS by ALPN, --http2-prior-knowledge on plain) and nghttp2's h2load for many
// streams on one connection, each stream a request through limits and breakers. What no
// well-behaved client sends: http2_protection_test.cpp.
#include "tests/integration/proxy/http2_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace http2_support;  // NOLINT(google-build-using-namespace)

/// h2load's "status codes:" line as {2xx, 3xx, 4xx, 5xx}, and its requests line's succeeded.
struct H2loadResult {
  int ok = -1, redirect = -1, client_error = -1, server_error = -1, succeeded = -1;
  std::string protocol;
  std::string output;
};

H2loadResult h2load(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/h2load"};
  argv.insert(argv.end(), args.begin(), args.end());
  H2loadResult r;
  r.output = run_process(argv, 120s).out;
  std::smatch m;
  if (std::regex_search(
          r.output, m, std::regex(R"(status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx)"))) {
    r.ok = std::stoi(m[1]);
    r.redirect = std::stoi(m[2]);
    r.client_error = std::stoi(m[3]);
    r.server_error = std::stoi(m[4]);
  }
  if (std::regex_search(r.output, m, std::regex(R"((\d+) succeeded)"))) {
    r.succeeded = std::stoi(m[1]);
  }
  if (std::regex_search(r.output, m, std::regex(R"(Application protocol: (\S+))"))) {
    r.protocol = m[1];
  }
  return r;
}

TEST_F(Http2Test, CurlSpeaksH2ByAlpnAndH2cByPriorKnowledgeAndEachStreamIsLoggedAsHttp2) {
  SluiceProcess gateway(config);
  ProcessResult r = curl_https(gateway.listener_port("secure"), "api.example.test", pki.ca_cert(),
                               "/headers", {"--http2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(r.out.ends_with("\n200 2")) << r.out;
  json echoed = json::parse(r.out.substr(0, r.out.rfind('\n')));
  EXPECT_EQ(header_values(echoed, "X-Forwarded-Proto"), std::vector<std::string>{"https"});
  EXPECT_EQ(header_values(echoed, "Host"),
            std::vector<std::string>{"api.example.test:" +
                                     std::to_string(gateway.listener_port("secure"))});
  EXPECT_EQ(echoed["target"], "/headers");
  r = curl_h2c(gateway.listener_port("h2c"), "/headers?q=1", {"-H", "X-API-Key: k1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(r.out.ends_with("\n200 2")) << r.out;
  echoed = json::parse(r.out.substr(0, r.out.rfind('\n')));
  EXPECT_EQ(echoed["target"], "/headers?q=1");
  EXPECT_EQ(header_values(echoed, "X-Forwarded-Proto"), std::vector<std::string>{"http"});
  EXPECT_EQ(header_values(echoed, "x-api-key"), std::vector<std::string>{"k1"});
  // The same h2c listener still serves HTTP/1.1, and a plain listener without http2 does not
  // take prior knowledge.
  HttpClient h1(gateway.listener_port("h2c"));
  EXPECT_EQ(h1.get("/ok").result_int(), 200);
  r = curl_h2c(gateway.listener_port("plain"), "/ok");
  EXPECT_FALSE(r.out.ends_with("\n200 2")) << r.out;
  ASSERT_TRUE(gateway.process().wait_for_line(R"("protocol":"HTTP/2")"))
      << gateway.process().output();
  // Request bodies both ways, with and without a length.
  r = curl_h2c(gateway.listener_port("h2c"), "/echo", {"--data-binary", "hello over h2"});
  EXPECT_EQ(r.out, "hello over h2\n200 2");
  r = curl_h2c(gateway.listener_port("h2c"), "/echo",
               {"-H", "Transfer-Encoding: chunked", "--data-binary", "no length"});
  EXPECT_EQ(r.out, "no length\n200 2");
}

TEST_F(Http2Test, TheUpstreamGetsAnHttp11HeadAndItsChunkedTrailersComeBackAsHttp2Trailers) {
  RecordingUpstream upstream;
  upstream.reply_with(
      {"HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\n"
       "Transfer-Encoding: chunked\r\nTrailer: grpc-status\r\n\r\n"
       "5\r\nhello\r\n0\r\ngrpc-status: 0\r\ngrpc-message: fine\r\n\r\n",
       false});
  config["backends"]["demo"]["endpoints"] = json::array({upstream.endpoint()});
  SluiceProcess gateway(config);
  const ProcessResult r = run_process(
      {"/usr/bin/nghttp", "-nv", "-H", "cookie: a=1", "-H", "cookie: b=2", "-H", "te: trailers",
       "http://127.0.0.1:" + std::to_string(gateway.listener_port("h2c")) + "/svc/Call?x=1"},
      30s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("recv (stream_id=13) :status: 200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recv (stream_id=13) grpc-status: 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recv (stream_id=13) grpc-message: fine"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("transfer-encoding"), std::string::npos) << r.out;
  ASSERT_TRUE(upstream.wait_for_requests(1));
  const std::string head = upstream.requests().at(0);
  EXPECT_TRUE(head.starts_with("GET /svc/Call?x=1 HTTP/1.1\r\n")) << head;
  EXPECT_NE(head.find("\r\ncookie: a=1; b=2\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("\r\nte:"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nhost: 127.0.0.1:"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nX-Forwarded-Proto: http\r\n"), std::string::npos) << head;
}

TEST_F(Http2Test, ManyParallelStreamsOnOneConnectionAreEachARequest) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("h2c");
  const H2loadResult r = h2load(
      {"-n", "2000", "-c", "1", "-m", "100", "http://127.0.0.1:" + std::to_string(port) + "/ok"});
  EXPECT_EQ(r.protocol, "h2c") << r.output;
  EXPECT_EQ(r.ok, 2000) << r.output;
  const Scrape scrape = scrape_until(gateway, "2000 requests counted", [](const Scrape& s) {
    return s.find("sluice_requests_total", {{"route", "all"}, {"backend", "demo"}, {"code", "200"}})
               .value_or(0) >= 2000;
  });
  EXPECT_EQ(scrape.value("sluice_requests_total",
                         {{"route", "all"}, {"backend", "demo"}, {"code", "200"}}),
            2000);
  // Over TLS too (h2 by ALPN).
  const H2loadResult tls =
      h2load({"-n", "300", "-c", "2", "-m", "30",
              "https://127.0.0.1:" + std::to_string(gateway.listener_port("secure")) + "/ok"});
  EXPECT_EQ(tls.protocol, "h2") << tls.output;
  EXPECT_EQ(tls.ok, 300) << tls.output;
}

TEST_F(Http2Test, ALimitRejectsTheStreamsPastItWhileTheOthersPass) {
  config["limits"] = {{"tight", {{"requests", 10}, {"window_ms", 60000}, {"buckets", 6}}}};
  config["identity"] = json::array({{{"client_ip", true}}});
  config["routes"][0]["limit"] = "tight";
  SluiceProcess gateway(config);
  const H2loadResult r =
      h2load({"-n", "30", "-c", "1", "-m", "30",
              "http://127.0.0.1:" + std::to_string(gateway.listener_port("h2c")) + "/ok"});
  EXPECT_EQ(r.ok, 10) << r.output;
  EXPECT_EQ(r.client_error, 20) << r.output;
  const ProcessResult limited = curl_h2c(gateway.listener_port("h2c"), "/ok", {"-i"});
  EXPECT_NE(limited.out.find("HTTP/2 429"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("retry-after:"), std::string::npos) << limited.out;
}

TEST_F(Http2Test, TheBreakerDropsStreamsOfAFailingBackendOnALiveConnection) {
  config["backends"]["demo"]["breaker"] = {
      {"enabled", true}, {"k", 1.1}, {"protection", 5}, {"window_ms", 10000}, {"buckets", 10}};
  SluiceProcess gateway(config);
  const H2loadResult r =
      h2load({"-n", "400", "-c", "1", "-m", "10",
              "http://127.0.0.1:" + std::to_string(gateway.listener_port("h2c")) + "/status/500"});
  EXPECT_EQ(r.server_error, 400) << r.output;  // the backend's 500s, then the breaker's 503s
  ASSERT_TRUE(gateway.process().wait_for_line(R"("breaker":"dropped")"))
      << gateway.process().output();
  EXPECT_GT(metric_value(gateway, "sluice_breaker_drops_total", {{"backend", "demo"}}), 0);
}

TEST_F(Http2Test, AGibibyteUpAndDownOnOneStreamKeepsMemoryFlatWhileOtherStreamsFlow) {
  config["http"]["max_body_bytes"] = std::uint64_t{1} << 31;
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("h2c");
  const std::uint64_t size = kSanitized ? (std::uint64_t{64} << 20) : (std::uint64_t{1} << 30);
  TempDir dir;
  const std::filesystem::path big = dir.path() / "big.bin";
  { std::ofstream(big).close(); }
  std::filesystem::resize_file(big, size);              // sparse: zeros without the disk
  EXPECT_EQ(curl_h2c(port, "/ok").out, "ok\n\n200 2");  // warm
  const std::size_t before = rss_bytes(gateway.process().pid());
  std::size_t peak = before;
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak, rss_bytes(gateway.process().pid()));
      std::this_thread::sleep_for(50ms);
    }
  });
  // One connection (curl multiplexes --parallel transfers): the upload echoed back, and
  // slow requests beside it that must finish while it runs.
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> argv{"/usr/bin/curl",
                                "-sS",
                                "--parallel",
                                "--parallel-immediate",
                                "--http2-prior-knowledge",
                                "-T",
                                big.string(),
                                "-o",
                                "/dev/null",
                                "-w",
                                "%{http_code} %{size_download} %{size_upload}\n",
                                base + "/echo"};
  for (int i = 0; i < 3; ++i) {
    for (const std::string& a :
         {std::string("--next"), std::string("--http2-prior-knowledge"), std::string("-o"),
          std::string("/dev/null"), std::string("-w"),
          std::string("%{http_code} %{size_download} %{size_upload}\n"), base + "/slow/300"}) {
      argv.push_back(a);
    }
  }
  const ProcessResult r = run_process(argv, 600s);
  done = true;
  sampler.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string whole = "200 " + std::to_string(size) + " " + std::to_string(size);
  EXPECT_NE(r.out.find(whole), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;
  if (!kSanitized) {
    EXPECT_LT(peak - before, std::size_t{48} << 20) << "RSS grew with the body";
  }
  // Down alone, a gibibyte generated by the backend.
  const ProcessResult down = curl_h2c(port, "/bytes/" + std::to_string(size),
                                      {"-o", "/dev/null", "-w", "%{size_download}"});
  EXPECT_TRUE(down.out.starts_with(std::to_string(size))) << down.out << down.err;
}

}  // namespace
}  // namespace sluice::testing
