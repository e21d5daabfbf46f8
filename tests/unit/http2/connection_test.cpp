// SPDX-License-Identifier: Apache-2.0
// http2::Connection against libnghttp2's own client session, in memory, under a manual clock
// (docs/http2.md): streams as HTTP/1.1 requests and responses, the reset budget, bounded header
// blocks and CONTINUATION, flow control both ways, GOAWAY on shutdown.
#include "gateway/http2/connection.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/h2_frame.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::http2 {
namespace {

namespace net = boost::asio;
using boost::system::error_code;

struct Host final : ConnectionHost {
  std::vector<Stream*> requests;
  void on_request(Stream& s) override { requests.push_back(&s); }
  void on_output() override {}
};

/// What the client saw of one stream.
struct Seen {
  FieldVector headers;
  FieldVector trailers;
  std::string body;
  bool closed = false;
  std::uint32_t error = 0;
};

/// libnghttp2's client session, its frames handed over in memory.
class Client {
 public:
  explicit Client(std::uint32_t window = 65535) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
               std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
               void* user) {
          Seen& seen = static_cast<Client*>(user)->streams[frame->hd.stream_id];
          FieldVector& into = frame->headers.cat == NGHTTP2_HCAT_HEADERS && !seen.headers.empty()
                                  ? seen.trailers
                                  : seen.headers;
          into.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                            std::string(reinterpret_cast<const char*>(value), valuelen));
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cb, [](nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
               std::size_t len, void* user) {
          static_cast<Client*>(user)->streams[id].body.append(reinterpret_cast<const char*>(data),
                                                              len);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cb, [](nghttp2_session*, std::int32_t id, std::uint32_t error, void* user) {
          Seen& seen = static_cast<Client*>(user)->streams[id];
          seen.closed = true;
          seen.error = error;
          return 0;
        });
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, void* user) {
          if (frame->hd.type == NGHTTP2_GOAWAY) {
            static_cast<Client*>(user)->goaway = frame->goaway.error_code;
            static_cast<Client*>(user)->goaway_last = frame->goaway.last_stream_id;
          }
          return 0;
        });
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_no_auto_window_update(option, 1);
    nghttp2_session_client_new2(&session, cb, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(cb);
    const nghttp2_settings_entry entry{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window};
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, &entry, 1);
  }
  ~Client() { nghttp2_session_del(session); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Submits a request; `body` set: sent with a content-length from a data provider.
  std::int32_t request(const std::string& method, const std::string& path,
                       const FieldVector& extra = {}, const std::string* body = nullptr) {
    FieldVector fields{{":method", method},
                       {":scheme", "https"},
                       {":authority", "api.example.test"},
                       {":path", path}};
    fields.insert(fields.end(), extra.begin(), extra.end());
    return submit(fields, body);
  }

  /// Submits a request of exactly these fields, pseudo-fields included.
  std::int32_t submit(FieldVector fields, const std::string* body = nullptr) {
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : fields) {
      nv.push_back({reinterpret_cast<std::uint8_t*>(n.data()),
                    reinterpret_cast<std::uint8_t*>(v.data()), n.size(), v.size(),
                    NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider provider{};
    if (body != nullptr) {
      upload = *body;
      uploaded = 0;
      provider.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf,
                                  std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                  void* user) -> ssize_t {
        Client& c = *static_cast<Client*>(user);
        const std::size_t n = std::min(length, c.upload.size() - c.uploaded);
        std::memcpy(buf, c.upload.data() + c.uploaded, n);
        c.uploaded += n;
        if (c.uploaded == c.upload.size()) {
          *flags |= NGHTTP2_DATA_FLAG_EOF;
        }
        return static_cast<ssize_t>(n);
      };
    }
    return nghttp2_submit_request(session, nullptr, nv.data(), nv.size(),
                                  body != nullptr ? &provider : nullptr, nullptr);
  }

  nghttp2_session* session = nullptr;
  std::map<std::int32_t, Seen> streams;
  std::optional<std::uint32_t> goaway;
  std::int32_t goaway_last = -1;
  std::string upload;
  std::size_t uploaded = 0;
};

class ConnectionTest : public ::testing::Test {
 protected:
  explicit ConnectionTest(Settings s = {}) : settings(s) {}

  /// Moves frames both ways and runs completions until nothing moves.
  void pump() {
    for (int round = 0; round < 10000; ++round) {
      bool moved = false;
      for (;;) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(client.session, &data);
        if (n <= 0) {
          break;
        }
        moved = true;
        if (!server.receive({reinterpret_cast<const char*>(data), static_cast<std::size_t>(n)})) {
          server_failed = true;
        }
      }
      std::string out;
      server.send(out, std::size_t{1} << 20);
      if (!out.empty()) {
        moved = true;
        nghttp2_session_mem_recv(client.session, reinterpret_cast<const std::uint8_t*>(out.data()),
                                 out.size());
      }
      if (ioc.poll() > 0) {
        moved = true;
      }
      ioc.restart();
      if (!moved) {
        return;
      }
    }
  }

  /// Reads the stream's request body to its end (pumping), returns it.
  std::string read_body(Stream& s) {
    std::string body;
    for (bool done = false; !done;) {
      std::array<char, 4096> chunk{};
      bool completed = false;
      s.read(net::buffer(chunk), Stream::Handler([&](error_code ec, std::size_t n) {
               completed = true;
               body.append(chunk.data(), n);
               done = static_cast<bool>(ec);
             }));
      pump();
      if (!completed) {
        ADD_FAILURE() << "the read did not complete";
        break;
      }
    }
    return body;
  }

  static std::string field(const FieldVector& fields, const std::string& name) {
    for (const auto& [n, v] : fields) {
      if (n == name) {
        return v;
      }
    }
    return "<none>";
  }

  net::io_context ioc;
  testing::ManualClock clock;
  Host host;
  Settings settings;
  Connection server{settings, host, ioc.get_executor(), clock};
  Client client;
  bool server_failed = false;
};

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
}

}  // namespace
}  // namespace sluice::http2
