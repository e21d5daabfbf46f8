// SPDX-License-Identifier: Apache-2.0
// HTTP/2 protections through the real binary (docs/http2.md): raw frames for what no
// well-behaved client sends (a CONTINUATION flood, rapid reset, a malformed pseudo-field, a
// window that never opens), idle GOAWAY and the drain. Streams as requests: http2_test.cpp.
#include "tests/integration/proxy/http2_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace http2_support;  // NOLINT(google-build-using-namespace)

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
