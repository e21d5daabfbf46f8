// SPDX-License-Identifier: Apache-2.0
// HTTP/2 downstream through the real binary (docs/http2.md), with real clients: curl
// (--http2 over TLS by ALPN, --http2-prior-knowledge on plain), nghttp2's h2load for many
// streams on one connection, and raw frames for what no well-behaved client sends (rapid reset,
// a CONTINUATION flood, a window that never opens).
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
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// ---- raw frames -------------------------------------------------------------------------------

constexpr std::uint8_t kHeaders = 0x1;
constexpr std::uint8_t kRstStream = 0x3;
constexpr std::uint8_t kSettings = 0x4;
constexpr std::uint8_t kGoaway = 0x7;
constexpr std::uint8_t kContinuation = 0x9;
constexpr std::uint8_t kEndStream = 0x1;
constexpr std::uint8_t kEndHeaders = 0x4;

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload) {
  return h2_frame(type, flags, stream, payload);
}

/// A GET's header block in HPACK without the dynamic table or Huffman: :method GET, :scheme
/// http (static entries), :path and :authority as literals with indexed names.
std::string get_block(const std::string& path) {
  std::string block = "\x82\x86";
  block.push_back('\x04');
  block.push_back(static_cast<char>(path.size()));
  block += path;
  block += std::string("\x01\x09localhost", 11);
  return block;
}

struct Frame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::string payload;
  [[nodiscard]] std::uint32_t error_code() const {  // GOAWAY's or RST_STREAM's
    const std::size_t at = type == kGoaway ? 4 : 0;
    std::uint32_t code = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      code = (code << 8U) | static_cast<unsigned char>(payload.at(at + i));
    }
    return code;
  }
};

/// An HTTP/2 client that writes whatever frames it is given, over plain TCP (h2c).
class RawH2 {
 public:
  /// Connects and sends the preface and a SETTINGS frame with `settings` (6 bytes per entry).
  RawH2(std::uint16_t port, const std::string& settings = {}) : socket_(ioc_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const timeval timeout{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    send(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(kSettings, 0, 0, settings));
  }
  /// False once the peer is gone.
  bool send(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes), ec);
    return !ec;
  }
  /// The next frame, or nullopt when the connection ended (or 10 s passed).
  std::optional<Frame> next() {
    std::array<char, 9> head{};
    boost::system::error_code ec;
    boost::asio::read(socket_, boost::asio::buffer(head), ec);
    if (ec) {
      return std::nullopt;
    }
    Frame f;
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(head.at(i)); };
    const std::size_t length = (byte(0) << 16U) | (byte(1) << 8U) | byte(2);
    f.type = byte(3);
    f.flags = byte(4);
    f.stream = ((byte(5) & 0x7FU) << 24U) | (byte(6) << 16U) | (byte(7) << 8U) | byte(8);
    f.payload.resize(length);
    boost::asio::read(socket_, boost::asio::buffer(f.payload), ec);
    if (ec) {
      return std::nullopt;
    }
    return f;
  }
  /// Frames until one of `type` (returned) or the end of the connection (nullopt).
  std::optional<Frame> until(std::uint8_t type) {
    while (auto f = next()) {
      if (f->type == type) {
        return f;
      }
    }
    return std::nullopt;
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
};

// ---- clients --------------------------------------------------------------------------------

/// curl with HTTP/2 by prior knowledge: the body, then a line "STATUS HTTP_VERSION".
ProcessResult curl_h2c(std::uint16_t port, const std::string& path,
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

TEST_F(Http2Test, OversizedHeaderBlocksAre431AndAContinuationFloodGetsGoaway) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("h2c");
  ProcessResult r = curl_h2c(port, "/ok", {"-H", "X-Big: " + std::string(9000, 'b')});
  EXPECT_TRUE(r.out.ends_with("\n431 2")) << r.out;
  // A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION after
  // CONTINUATION.
  RawH2 raw(port);
  raw.send(frame(kHeaders, kEndStream, 1, "\x82"));
  for (int i = 0; i < 200; ++i) {
    if (!raw.send(frame(kContinuation, 0, 1, "\x84"))) {
      break;
    }
  }
  const std::optional<Frame> goaway = raw.until(kGoaway);
  ASSERT_TRUE(goaway.has_value());
  EXPECT_EQ(goaway->error_code(), 0xBU) << "ENHANCE_YOUR_CALM";
  EXPECT_EQ(curl_h2c(port, "/ok").out, "ok\n\n200 2") << "the gateway is fine";
}

TEST_F(Http2Test, AnUnknownSchemeOrAnAbsolutePathIsAStreamErrorAndNeverGoesUpstream) {
  // RFC 9113 §8.3.1: :path is origin-form (or * for OPTIONS). An absolute-form :path would be
  // routed by the authority inside it, not by :authority; with :scheme foo nghttp2 lets it by.
  RecordingUpstream up;
  up.reply_with({"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false});
  config["backends"]["demo"]["endpoints"] = json::array({up.endpoint()});
  SluiceProcess gateway(config);
  RawH2 raw(gateway.listener_port("h2c"));
  const auto literal = [](char index, const std::string& value) {  // indexed name, no indexing
    return std::string(1, index) + static_cast<char>(value.size()) + value;
  };
  const std::string foo_scheme = "\x82" + literal('\x06', "foo") +
                                 literal('\x04', "http://evil.example/x") +
                                 literal('\x01', "localhost");
  raw.send(frame(kHeaders, kEndStream | kEndHeaders, 1, foo_scheme));
  raw.send(frame(kHeaders, kEndStream | kEndHeaders, 3, get_block("http://evil.example/x")));
  raw.send(frame(kHeaders, kEndStream | kEndHeaders, 5, get_block("/fine")));
  std::map<std::uint32_t, std::uint32_t> resets;
  bool answered = false;
  while (!answered) {
    const std::optional<Frame> f = raw.next();
    ASSERT_TRUE(f.has_value()) << "the connection ended";
    if (f->type == kRstStream) {
      resets[f->stream] = f->error_code();
    }
    ASSERT_NE(f->type, kGoaway) << "a stream error, not a connection error";
    answered = f->type == kHeaders && f->stream == 5;
  }
  EXPECT_EQ(resets[1], 0x1U) << "PROTOCOL_ERROR";
  EXPECT_EQ(resets[3], 0x1U) << "PROTOCOL_ERROR";
  ASSERT_TRUE(up.wait_for_requests(1));
  EXPECT_EQ(up.request_count(), 1U);
  EXPECT_TRUE(up.requests().at(0).starts_with("GET /fine HTTP/1.1\r\nhost: localhost\r\n"))
      << up.requests().at(0);
}

TEST_F(Http2Test, OpeningAndResettingStreamsInALoopGetsGoawayAndTheGatewayStaysHealthy) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("h2c");
  RawH2 raw(port);
  std::string burst;
  bool open = true;
  for (std::uint32_t id = 1; id < 4000 && open; id += 2) {
    burst += frame(kHeaders, kEndStream | kEndHeaders, id, get_block("/slow/200"));
    burst += frame(kRstStream, 0, id, std::string("\0\0\0\x08", 4));  // CANCEL
    if (burst.size() > 4096) {
      open = raw.send(burst);
      burst.clear();
    }
  }
  const std::optional<Frame> goaway = raw.until(kGoaway);
  ASSERT_TRUE(goaway.has_value());
  EXPECT_EQ(goaway->error_code(), 0xBU) << "ENHANCE_YOUR_CALM";
  EXPECT_FALSE(raw.until(kGoaway).has_value()) << "the connection is closed after it";
  EXPECT_EQ(curl_h2c(port, "/ok").out, "ok\n\n200 2");
  HttpClient h1(gateway.listener_port("plain"));
  EXPECT_EQ(h1.get("/ok").result_int(), 200);
}

TEST_F(Http2Test, ASlowReaderWhoseWindowStaysClosedIsNotBufferedForAndIsReset) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("h2c");
  const std::size_t before = rss_bytes(gateway.process().pid());
  // SETTINGS_INITIAL_WINDOW_SIZE 0: no DATA may come until a WINDOW_UPDATE that never does.
  RawH2 raw(port, std::string("\x00\x04\x00\x00\x00\x00", 6));
  raw.send(frame(kHeaders, kEndStream | kEndHeaders, 1, get_block("/bytes/1073741824")));
  std::optional<Frame> f;
  bool data = false;
  bool head = false;
  while ((f = raw.next()) && f->type != kRstStream && f->type != kGoaway) {
    head = head || (f->type == kHeaders && f->stream == 1);
    data = data || (f->type == 0x0 && !f->payload.empty());
  }
  EXPECT_TRUE(head);
  EXPECT_FALSE(data);
  ASSERT_TRUE(f.has_value()) << "the stream is reset after idle_timeout_ms";
  EXPECT_EQ(f->type, kRstStream);
  EXPECT_EQ(f->stream, 1U);
  if (!kSanitized) {
    EXPECT_LT(rss_bytes(gateway.process().pid()), before + (std::size_t{16} << 20));
  }
  EXPECT_EQ(curl_h2c(port, "/ok").out, "ok\n\n200 2");
}

TEST_F(Http2Test, AConnectionIdleAfterItsLastStreamGetsGoawayAfterIdleTimeout) {
  SluiceProcess gateway(config);
  // The request goes in the same write as the preface: the gateway reads on while the stream
  // is served, so the idle wait starts while a read is already pending (this hung before).
  RawH2 raw(gateway.listener_port("h2c"));
  const auto sent = std::chrono::steady_clock::now();
  raw.send(frame(kHeaders, kEndStream | kEndHeaders, 1, get_block("/ok")));
  const std::optional<Frame> goaway = raw.until(kGoaway);
  ASSERT_TRUE(goaway.has_value()) << "idle_timeout_ms is 2000";
  EXPECT_EQ(goaway->error_code(), 0U) << "NO_ERROR";
  EXPECT_GE(std::chrono::steady_clock::now() - sent, 1500ms);
  EXPECT_FALSE(raw.next().has_value()) << "closed after the GOAWAY";
}

TEST_F(Http2Test, ADrainSendsGoawayAndLetsOpenStreamsFinish) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("h2c");
  ChildProcess client({"/usr/bin/curl", "-sS", "--http2-prior-knowledge", "-w",
                       "\n%{http_code} %{http_version}",
                       "http://127.0.0.1:" + std::to_string(port) + "/slow/1000"});
  scrape_until(gateway, "the request is upstream", [](const Scrape& s) {
    return s.find("sluice_upstream_connections", {{"backend", "demo"}, {"state", "active"}})
               .value_or(0) >= 1;
  });
  ASSERT_TRUE(gateway.process().send_signal(SIGTERM));
  ASSERT_TRUE(client.wait_for_line("200 2", 10s)) << client.output();
  EXPECT_EQ(gateway.process().wait_exit(10s), 0) << gateway.process().output();
}

}  // namespace
}  // namespace sluice::testing
