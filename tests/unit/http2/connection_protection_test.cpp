// SPDX-License-Identifier: Apache-2.0
// http2::Connection's protections (docs/http2.md, "Protections"), against libnghttp2's own
// client session in memory: a malformed request is a stream error, GOAWAY on shutdown lets the
// open stream finish, the reset budget, header blocks over max_header_bytes, a CONTINUATION
// flood. Streams and bodies: connection_test.cpp.
#include "tests/unit/http2/connection_test_support.hpp"

namespace sluice::http2 {
namespace {

using namespace connection_support;  // NOLINT(google-build-using-namespace)

TEST_F(ConnectionTest, AMalformedSchemeOrPathResetsTheStreamUnserved) {
  // RFC 9113 §8.3.1: origin-form (or * for OPTIONS) only; otherwise the HTTP/1.1 head would
  // carry an absolute-form target routed by its own authority, not :authority.
  const std::int32_t foo = client.submit({{":method", "GET"},
                                          {":scheme", "foo"},
                                          {":authority", "api.example.test"},
                                          {":path", "http://evil.example/x"}});
  const std::int32_t star = client.submit({{":method", "GET"},
                                           {":scheme", "https"},
                                           {":authority", "api.example.test"},
                                           {":path", "*"}});
  const std::int32_t good = client.request("GET", "/ok");
  pump();
  ASSERT_EQ(host.requests.size(), 1U);  // only the well-formed one
  EXPECT_TRUE(host.requests[0]->head_bytes().starts_with("GET /ok HTTP/1.1\r\n"));
  EXPECT_TRUE(client.streams[foo].closed);
  EXPECT_EQ(client.streams[foo].error, NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(client.streams[star].closed);
  EXPECT_EQ(client.streams[star].error, NGHTTP2_PROTOCOL_ERROR);
  EXPECT_FALSE(client.streams[good].closed);
  EXPECT_FALSE(client.goaway.has_value());  // a stream error, not a connection error
}

TEST_F(ConnectionTest, ShutDownSendsGoawayAndTheOpenStreamStillFinishes) {
  const std::int32_t id = client.request("GET", "/slow");
  pump();
  Stream& s = *host.requests[0];
  server.shut_down();
  pump();
  ASSERT_TRUE(client.goaway.has_value());
  EXPECT_EQ(*client.goaway, static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_EQ(client.goaway_last, id);
  EXPECT_TRUE(server.wants_io());  // the stream is still open
  error_code ec;
  const std::string response = "HTTP/1.1 204 No Content\r\n\r\n";
  s.write_now(net::buffer(response), ec);
  s.served();
  pump();
  EXPECT_EQ(field(client.streams[id].headers, ":status"), "204");
  EXPECT_FALSE(server.wants_io());
}

class SmallBudgetTest : public ConnectionTest {
 protected:
  SmallBudgetTest() : ConnectionTest(Settings{128, 1024, 10}) {}
};

TEST_F(SmallBudgetTest, OpeningAndResettingStreamsInALoopGetsGoawayEnhanceYourCalm) {
  for (int i = 0; i < 10; ++i) {
    const std::int32_t id = client.request("GET", "/r");
    pump();
    nghttp2_submit_rst_stream(client.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    pump();
  }
  EXPECT_FALSE(client.goaway.has_value()) << "ten resets are within the budget";
  clock.advance(std::chrono::seconds(10));  // the budget refills over 10 s
  for (int i = 0; i < 30 && !client.goaway; ++i) {
    const std::int32_t id = client.request("GET", "/r");
    pump();
    nghttp2_submit_rst_stream(client.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    pump();
  }
  ASSERT_TRUE(client.goaway.has_value());
  EXPECT_EQ(*client.goaway, static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_TRUE(server_failed);
  EXPECT_NE(server.reason().find("rapid reset"), std::string_view::npos);
  EXPECT_FALSE(server.wants_io());
}

TEST_F(SmallBudgetTest, AHeaderBlockOverMaxHeaderBytesIsFlaggedFor431) {
  client.request("GET", "/h", {{"x-big", std::string(2000, 'v')}});
  pump();
  ASSERT_EQ(host.requests.size(), 1U);
  EXPECT_TRUE(host.requests[0]->oversized());
  EXPECT_EQ(host.requests[0]->head_bytes().find("x-big"), std::string_view::npos);
}

using testing::h2_frame;

TEST_F(ConnectionTest, ACONTINUATIONFloodEndsTheConnection) {
  // The 2024 attack: a header block that never ends, one small CONTINUATION after another.
  std::string bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  bytes += h2_frame(NGHTTP2_SETTINGS, 0, 0, "");
  bytes +=
      h2_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, "\x82");  // :method GET, no END_HEADERS
  bool refused = false;
  refused = !server.receive(bytes);
  for (int i = 0; i < 1000 && !refused; ++i) {
    refused = !server.receive(h2_frame(NGHTTP2_CONTINUATION, 0, 1, "\x84"));  // :path /
  }
  EXPECT_TRUE(refused);
  EXPECT_TRUE(host.requests.empty());
  std::string out;
  server.send(out, std::size_t{1} << 20);
  // A GOAWAY ENHANCE_YOUR_CALM (0xb) goes out.
  const std::size_t goaway = out.find(std::string("\x07\x00\x00\x00\x00\x00", 6));
  ASSERT_NE(goaway, std::string::npos) << out.size();
  EXPECT_EQ(out.at(goaway + 6 + 7), '\x0b');
  EXPECT_NE(server.reason().find("CONTINUATION"), std::string_view::npos) << server.reason();
  ASSERT_EQ(host.goaways.size(), 1U) << "the session hears of the GOAWAY it sent";
  EXPECT_EQ(host.goaways[0].first, static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST_F(ConnectionTest, AGoawayTheLibraryAnswersItselfReachesTheSessionWithItsReason) {
  // A PING of 7 bytes (it has 8): libnghttp2 answers GOAWAY FRAME_SIZE_ERROR by itself, and
  // nghttp2_session_mem_recv does not fail.
  std::string bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  bytes += h2_frame(NGHTTP2_SETTINGS, 0, 0, "");
  bytes += h2_frame(NGHTTP2_PING, 0, 0, std::string(7, 'x'));
  server.receive(bytes);
  std::string out;
  server.send(out, std::size_t{1} << 20);
  ASSERT_EQ(host.goaways.size(), 1U);
  EXPECT_EQ(host.goaways[0].first, static_cast<std::uint32_t>(NGHTTP2_FRAME_SIZE_ERROR));
  EXPECT_FALSE(host.goaways[0].second.empty());
  EXPECT_NE(host.goaways[0].second, "shut down (drain or idle)") << host.goaways[0].second;
}

TEST_F(ConnectionTest, AShutDownsGoawayReachesTheSessionAsNoError) {
  client.request("GET", "/");
  pump();
  server.shut_down();
  pump();
  ASSERT_EQ(host.goaways.size(), 1U);
  EXPECT_EQ(host.goaways[0].first, static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_EQ(host.goaways[0].second, "shut down (drain or idle)");
}

}  // namespace
}  // namespace sluice::http2
