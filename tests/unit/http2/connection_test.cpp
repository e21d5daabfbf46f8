// SPDX-License-Identifier: Apache-2.0
// http2::Connection against libnghttp2's own client session, in memory, under a manual clock
// (docs/http2.md): streams as HTTP/1.1 requests and responses, bodies and flow control both
// ways. Protections: connection_protection_test.cpp.
#include "tests/unit/http2/connection_test_support.hpp"
#include "tests/unit/http2/zero_page_probe.hpp"

namespace sluice::http2 {
namespace {

using namespace connection_support;  // NOLINT(google-build-using-namespace)

TEST_F(ConnectionTest, ARequestIsAnHttp11HeadAndItsResponseComesBackAsFrames) {
  const std::int32_t id = client.request("GET", "/users/7", {{"cookie", "a=1"}, {"cookie", "b=2"}});
  pump();
  ASSERT_EQ(host.requests.size(), 1U);
  Stream& s = *host.requests[0];
  EXPECT_EQ(s.head_bytes(),
            "GET /users/7 HTTP/1.1\r\nhost: api.example.test\r\ncookie: a=1; b=2\r\n\r\n");
  error_code ec;
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\nX-Backend: "
      "b1\r\n\r\nhello";
  EXPECT_EQ(s.write_now(net::buffer(response), ec), response.size());
  EXPECT_FALSE(ec);
  s.served();
  pump();
  const Seen& seen = client.streams[id];
  EXPECT_EQ(field(seen.headers, ":status"), "200");
  EXPECT_EQ(field(seen.headers, "x-backend"), "b1");
  EXPECT_EQ(field(seen.headers, "connection"), "<none>");
  EXPECT_EQ(seen.body, "hello");
  EXPECT_TRUE(seen.closed);
  EXPECT_EQ(seen.error, 0U);
  EXPECT_EQ(server.serving(), 0U);
}

TEST_F(ConnectionTest, TheRequestIdGoesAsANeverIndexedLiteralSoItLeavesTheTableAlone) {
  // docs/http2.md, "Header compression": a value new on every response would only push out
  // the table entries later responses reuse.
  std::size_t table_after_first = 0;
  for (const char* request_id :
       {"4f1c0000000000000000000000000001", "9a2e0000000000000000000000000002"}) {
    const std::int32_t id = client.request("GET", "/", {});
    pump();
    ASSERT_FALSE(host.requests.empty());
    Stream& s = *host.requests.back();
    error_code ec;
    const std::string response =
        std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: b1\r\n") +
        "X-Request-Id: " + request_id + "\r\n\r\nok";
    EXPECT_EQ(s.write_now(net::buffer(response), ec), response.size());
    s.served();
    pump();
    const Seen& seen = client.streams[id];
    EXPECT_EQ(field(seen.headers, "x-request-id"), request_id);
    EXPECT_EQ(seen.never_indexed, std::vector<std::string>{"x-request-id"});
    const std::size_t table = nghttp2_session_get_hd_inflate_dynamic_table_size(client.session);
    if (table_after_first == 0) {
      table_after_first = table;  // server: b1 and content-length: 2 were indexed
      EXPECT_GT(table_after_first, 0U);
    } else {
      EXPECT_EQ(table, table_after_first);  // the second response added nothing
    }
  }
}

TEST_F(ConnectionTest, AnIdleConnectionGivesItsFrameBufferPagesBackAndServesOnAfterwards) {
  // docs/http2.md, "Memory per connection": the frames of a large response fill nghttp2's
  // frame buffer; once the connection is idle its pages go back, and the next response is
  // whole.
  const std::string body(30000, 'x');  // (both rounds within the client's 64 KiB window)
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  pump();
  EXPECT_GE(server.memory().frame_buffer_resident_pages(), 1U);  // SETTINGS went out
  // Before any stream, the stream map's table and the HPACK rings are unwritten pages: not
  // resident, unless this kernel gives a private page at the first read (the one page nghttp2
  // reads is resident there; docs/http2.md).
  EXPECT_LE(server.memory().resident_pages(),
            server.memory().frame_buffer_resident_pages() + (reads_map_the_zero_page() ? 0U : 1U));
  for (int round = 0; round < 2; ++round) {
    const std::int32_t id = client.request("GET", "/large");
    pump();
    ASSERT_EQ(host.requests.size(), static_cast<std::size_t>(round) + 1);
    Stream& s = *host.requests.back();
    const std::size_t resident = server.memory().frame_buffer_resident_pages();
    server.release_idle_memory();  // a stream is being served: nothing happens
    EXPECT_EQ(server.memory().frame_buffer_resident_pages(), resident);
    error_code ec;
    s.write_now(net::buffer(response), ec);
    ASSERT_FALSE(ec);
    s.served();
    pump();
    const std::string& got = client.streams[id].body;
    EXPECT_EQ(got.size(), body.size()) << "round " << round;
    EXPECT_EQ(got.find_first_not_of('x'), std::string::npos) << "round " << round;
    EXPECT_GE(server.memory().frame_buffer_resident_pages(), 4U);  // 16 KiB DATA frames
    server.release_idle_memory();
    EXPECT_EQ(server.memory().frame_buffer_resident_pages(), 0U);
  }
}

TEST_F(ConnectionTest, ChunkedResponsesLoseTheFramingAndKeepTheirTrailers) {
  const std::int32_t id = client.request("GET", "/grpc");
  pump();
  ASSERT_EQ(host.requests.size(), 1U);
  Stream& s = *host.requests[0];
  error_code ec;
  const std::string response =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\ngrpc-status: "
      "0\r\n\r\n";
  s.write_now(net::buffer(response), ec);
  s.served();
  pump();
  const Seen& seen = client.streams[id];
  EXPECT_EQ(seen.body, "abc");
  EXPECT_EQ(field(seen.trailers, "grpc-status"), "0");
  EXPECT_EQ(field(seen.headers, "transfer-encoding"), "<none>");
  EXPECT_TRUE(seen.closed);
}

TEST_F(ConnectionTest, AnEmptyResponseEndsWithItsHeadersWithoutContentLengthZero) {
  // gRPC's trailers-only answer: a client reads every field of it as trailing metadata.
  const std::int32_t id = client.request("POST", "/test.Echo/Fail");
  pump();
  ASSERT_EQ(host.requests.size(), 1U);
  Stream& s = *host.requests[0];
  error_code ec;
  const std::string response =
      "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: 5\r\nContent-Length: "
      "0\r\n\r\n";
  s.write_now(net::buffer(response), ec);
  s.served();
  pump();
  const Seen& seen = client.streams[id];
  EXPECT_EQ(field(seen.headers, "grpc-status"), "5");
  EXPECT_EQ(field(seen.headers, "content-length"), "<none>");
  EXPECT_TRUE(seen.trailers.empty());
  EXPECT_TRUE(seen.closed);
}

TEST_F(ConnectionTest, ACutResponseResetsTheStream) {
  const std::int32_t id = client.request("GET", "/big");
  pump();
  Stream& s = *host.requests[0];
  error_code ec;
  const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part";
  s.write_now(net::buffer(response), ec);
  s.served();  // the upstream failed mid-body
  pump();
  EXPECT_TRUE(client.streams[id].closed);
  EXPECT_EQ(client.streams[id].error, static_cast<std::uint32_t>(NGHTTP2_INTERNAL_ERROR));
}

TEST_F(ConnectionTest, AnUploadStopsAtTheWindowUntilItIsReadThenArrivesWhole) {
  const std::string body(1U << 20, 'u');
  const FieldVector length{{"content-length", std::to_string(body.size())}};
  client.request("POST", "/upload", length, &body);
  pump();
  ASSERT_EQ(host.requests.size(), 1U);
  // Nobody read: the client could send one stream window, no more.
  EXPECT_LE(client.uploaded, std::size_t{kStreamWindow});
  EXPECT_LT(client.uploaded, body.size());
  Stream& s = *host.requests[0];
  EXPECT_EQ(read_body(s), body);
  EXPECT_EQ(client.uploaded, body.size());
}

TEST_F(ConnectionTest, ABodyWithoutALengthIsReadChunked) {
  const std::string body = "0123456789";
  client.request("POST", "/upload", {}, &body);
  pump();
  Stream& s = *host.requests[0];
  EXPECT_NE(s.head_bytes().find("transfer-encoding: chunked\r\n"), std::string_view::npos);
  EXPECT_EQ(read_body(s), "a\r\n0123456789\r\n0\r\n\r\n");
}

TEST_F(ConnectionTest, ABodyThatArrivedWholeBeforeServingGoesUpWithItsLength) {
  // A unary gRPC call's HEADERS and DATA come together: framed with a length, the request
  // leaves with its head in one write instead of streaming.
  const std::string body = "0123456789";
  client.request("POST", "/test.Echo/Unary", {}, &body);
  pump();
  Stream& s = *host.requests[0];
  s.settle_request_framing();
  EXPECT_EQ(s.head_bytes().find("transfer-encoding"), std::string_view::npos);
  EXPECT_NE(s.head_bytes().find("content-length: 10\r\n"), std::string_view::npos);
  EXPECT_EQ(read_body(s), body);
}

TEST_F(ConnectionTest, ABodyLargerThanTheSettleLimitStaysChunked) {
  const std::string body(kSettleLimit + 1, 'b');
  client.request("POST", "/upload", {}, &body);
  pump();
  Stream& s = *host.requests[0];
  s.settle_request_framing();
  EXPECT_NE(s.head_bytes().find("transfer-encoding: chunked\r\n"), std::string_view::npos);
  const std::string framed = read_body(s);
  EXPECT_TRUE(framed.ends_with("0\r\n\r\n"));
  EXPECT_GT(framed.size(), body.size());
}

TEST_F(ConnectionTest, AClientThatDoesNotReadHoldsTheResponseBufferBounded) {
  const std::int32_t id = client.request("GET", "/bytes");
  pump();
  Stream& s = *host.requests[0];
  error_code ec;
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n";
  EXPECT_EQ(s.write_now(net::buffer(head), ec), head.size());
  const std::string piece(16384, 'd');
  std::size_t accepted = 0;
  for (int i = 0; i < 256; ++i) {
    accepted += s.write_now(net::buffer(piece), ec);
    pump();
  }
  ASSERT_FALSE(ec);
  // The client's window (64 KiB, never updated) plus our buffer, not the 4 MiB offered.
  EXPECT_LE(accepted, 65535 + kResponseBuffer);
  EXPECT_LE(client.streams[id].body.size(), 65535U);
  // A pending write waits for room and completes once the client reads.
  bool wrote = false;
  s.write(net::buffer(piece), Stream::Handler([&](error_code, std::size_t n) { wrote = n > 0; }));
  pump();
  EXPECT_FALSE(wrote);
  nghttp2_session_consume(client.session, id, client.streams[id].body.size());
  pump();
  EXPECT_TRUE(wrote);
  s.cancel();
  s.served();
  pump();
}

}  // namespace
}  // namespace sluice::http2
