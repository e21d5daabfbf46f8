// SPDX-License-Identifier: Apache-2.0
// http2::ClientConnection and ClientStream against libnghttp2's own server session, in memory
// (docs/grpc.md, "HTTP/2 to backends"): requests written as HTTP/1.1 leave as HEADERS and DATA,
// responses come back as HTTP/1.1 bytes (Content-Length kept, else chunked, trailers as the
// chunked trailer section), resets and GOAWAY, flow control both ways.
#include "gateway/http2/client_connection.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gateway/proxy/exchange/relay.hpp"
#include "gateway/proxy/upstream/upstream_stream.hpp"

namespace sluice::http2 {
namespace {

namespace net = boost::asio;
using boost::system::error_code;

/// What the server saw of one stream.
struct Request {
  FieldVector headers;
  std::string body;
  bool ended = false;
  bool closed = false;
  std::uint32_t error = 0;
};

/// libnghttp2's server session, its frames handed over in memory; answers when told to.
class Server {
 public:
  /// `manual_window`: request bytes are credited back only by nghttp2_session_consume().
  explicit Server(std::uint32_t window = 65535, bool manual_window = false) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
               std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
               void* user) {
          static_cast<Server*>(user)->requests[frame->hd.stream_id].headers.emplace_back(
              std::string(reinterpret_cast<const char*>(name), namelen),
              std::string(reinterpret_cast<const char*>(value), valuelen));
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cb, [](nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
               std::size_t len, void* user) {
          static_cast<Server*>(user)->requests[id].body.append(reinterpret_cast<const char*>(data),
                                                               len);
          return 0;
        });
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, void* user) {
          if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 && frame->hd.stream_id > 0) {
            static_cast<Server*>(user)->requests[frame->hd.stream_id].ended = true;
          }
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cb, [](nghttp2_session*, std::int32_t id, std::uint32_t error, void* user) {
          Request& r = static_cast<Server*>(user)->requests[id];
          r.closed = true;
          r.error = error;
          return 0;
        });
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_no_auto_window_update(option, manual_window ? 1 : 0);
    nghttp2_session_server_new2(&session, cb, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(cb);
    const std::array<nghttp2_settings_entry, 2> entries{{
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window},
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100},
    }};
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, entries.data(), entries.size());
  }
  ~Server() { nghttp2_session_del(session); }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Answers stream `id`: the fields (":status" first), then `body` (none: the head ends the
  /// stream unless trailers follow), then `trailers` (none: the body ends it).
  void respond(std::int32_t id, const FieldVector& fields, const std::string& body,
               const FieldVector& trailers = {}) {
    auto& out = outgoing_[id];
    out.body = body;
    out.sent = 0;
    out.trailers = trailers;
    const auto nv = to_nv(fields);
    nghttp2_data_provider provider{};
    provider.read_callback = [](nghttp2_session* s, std::int32_t stream_id, std::uint8_t* buf,
                                std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                void* user) -> ssize_t {
      Server& server = *static_cast<Server*>(user);
      Outgoing& o = server.outgoing_[stream_id];
      const std::size_t n = std::min(length, o.body.size() - o.sent);
      std::memcpy(buf, o.body.data() + o.sent, n);
      o.sent += n;
      if (o.sent == o.body.size()) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!o.trailers.empty()) {
          *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
          const auto tv = to_nv(o.trailers);
          nghttp2_submit_trailer(s, stream_id, tv.data(), tv.size());
        }
      }
      return static_cast<ssize_t>(n);
    };
    const bool has_data = !body.empty() || !trailers.empty();
    nghttp2_submit_response(session, id, nv.data(), nv.size(), has_data ? &provider : nullptr);
  }

  static std::vector<nghttp2_nv> to_nv(const FieldVector& fields) {
    std::vector<nghttp2_nv> nv;
    for (const auto& [n, v] : fields) {
      nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(n.data())),
                    reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), n.size(),
                    v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    return nv;
  }

  nghttp2_session* session = nullptr;
  std::map<std::int32_t, Request> requests;

 private:
  struct Outgoing {
    std::string body;
    std::size_t sent = 0;
    FieldVector trailers;
  };
  std::map<std::int32_t, Outgoing> outgoing_;
};

struct Host final : ClientHost {
  void on_output() override { ++outputs; }
  int outputs = 0;
};

std::string field(const FieldVector& fields, const std::string& name) {
  for (const auto& [n, v] : fields) {
    if (n == name) {
      return v;
    }
  }
  return "<none>";
}

class ClientConnectionTest : public ::testing::Test {
 protected:
  explicit ClientConnectionTest(std::uint32_t window = 65535, bool manual_window = false)
      : server(window, manual_window) {}

  /// Moves frames both ways and runs completions until nothing moves.
  void pump() {
    for (int round = 0; round < 10000; ++round) {
      bool moved = false;
      std::string out;
      client->send(out, std::size_t{1} << 20);
      if (!out.empty()) {
        moved = true;
        nghttp2_session_mem_recv(server.session, reinterpret_cast<const std::uint8_t*>(out.data()),
                                 out.size());
      }
      for (;;) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(server.session, &data);
        if (n <= 0) {
          break;
        }
        moved = true;
        client->receive({reinterpret_cast<const char*>(data), static_cast<std::size_t>(n)});
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

  /// Writes `request` (HTTP/1.1 bytes) to `s`; returns whether the write completed (it may
  /// complete later: `written` says when).
  bool write(ClientStream& s, const std::string& request) {
    written = false;
    s.write(net::buffer(request),
            ClientStream::Handler([this](error_code, std::size_t) { written = true; }));
    pump();
    return written;
  }

  /// Reads the response (HTTP/1.1 bytes) to its end or an error (`ec`), pumping.
  std::string read_all(ClientStream& s, error_code& ec) {
    std::string got;
    for (;;) {
      std::array<char, 4096> chunk{};
      bool completed = false;
      error_code rec;
      s.read(net::buffer(chunk), ClientStream::Handler([&](error_code e, std::size_t n) {
               completed = true;
               rec = e;
               got.append(chunk.data(), n);
             }));
      pump();
      if (!completed) {
        ADD_FAILURE() << "the read did not complete; so far: " << got;
        return got;
      }
      if (rec) {
        ec = rec;
        return got;
      }
    }
  }

  bool written = false;
  net::io_context ioc;
  Host host;
  Server server;
  std::shared_ptr<ClientConnection> client =
      std::make_shared<ClientConnection>(host, ioc.get_executor(), false);
};

TEST_F(ClientConnectionTest, ARequestLeavesAsHeadersAndItsResponseComesBackAsHttp11) {
  auto s = client->open();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(write(*s,
                    "GET /users/7?x=1 HTTP/1.1\r\nHost: api.example.test\r\nConnection: "
                    "keep-alive\r\nKeep-Alive: timeout=5\r\nX-Request-Id: abc\r\n\r\n"));
  ASSERT_EQ(server.requests.size(), 1U);
  const auto& [id, request] = *server.requests.begin();
  EXPECT_EQ(field(request.headers, ":method"), "GET");
  EXPECT_EQ(field(request.headers, ":scheme"), "http");
  EXPECT_EQ(field(request.headers, ":authority"), "api.example.test");
  EXPECT_EQ(field(request.headers, ":path"), "/users/7?x=1");
  EXPECT_EQ(field(request.headers, "x-request-id"), "abc");
  EXPECT_EQ(field(request.headers, "te"), "trailers");
  EXPECT_EQ(field(request.headers, "connection"), "<none>");
  EXPECT_EQ(field(request.headers, "keep-alive"), "<none>");
  EXPECT_EQ(field(request.headers, "host"), "<none>");
  EXPECT_TRUE(request.ended);  // no body: the HEADERS end the stream
  server.respond(id, {{":status", "200"}, {"content-length", "5"}, {"x-backend", "b1"}}, "hello");
  error_code ec;
  const std::string response = read_all(*s, ec);
  EXPECT_EQ(ec, net::error::eof);
  EXPECT_EQ(response, "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-backend: b1\r\n\r\nhello");
  EXPECT_TRUE(s->response_ended());
  pump();
  EXPECT_EQ(client->streams(), 0U);
}

TEST_F(ClientConnectionTest, AResponseWhoseFramesCameInOneReadIsReadWholeInOneCompletion) {
  // HEADERS, DATA and END_STREAM in one read from the backend: the pending read completes once,
  // after all of them were taken in, with the whole response (not the head first and the body
  // after another trip through the worker's queue).
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  const std::int32_t id = server.requests.begin()->first;
  server.respond(id, {{":status", "200"}, {"content-length", "5"}}, "hello");
  std::string frames;
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(server.session, &data);
    if (n <= 0) {
      break;
    }
    frames.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  std::array<char, 4096> buffer{};
  int completions = 0;
  std::string got;
  s->read(net::buffer(buffer), ClientStream::Handler([&](error_code ec, std::size_t n) {
            ++completions;
            EXPECT_FALSE(ec) << ec.message();
            got.append(buffer.data(), n);
          }));
  ASSERT_TRUE(client->receive(frames));
  ioc.poll();
  EXPECT_EQ(completions, 1);
  EXPECT_EQ(got, "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
  EXPECT_TRUE(s->response_ended());
}

TEST_F(ClientConnectionTest, AChunkedRequestBodyLeavesAsDataEndingTheStream) {
  auto s = client->open();
  ASSERT_TRUE(write(*s,
                    "POST /test.Echo/Unary HTTP/1.1\r\nHost: h\r\nContent-Type: "
                    "application/grpc\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"));
  ASSERT_EQ(server.requests.size(), 1U);
  Request& request = server.requests.begin()->second;
  EXPECT_EQ(field(request.headers, "transfer-encoding"), "<none>");
  EXPECT_EQ(request.body, "abc");
  EXPECT_FALSE(request.ended);  // more may come
  ASSERT_TRUE(write(*s, "2\r\nde\r\n0\r\n\r\n"));
  EXPECT_EQ(request.body, "abcde");
  EXPECT_TRUE(request.ended);
}

TEST_F(ClientConnectionTest, AResponseWithoutLengthIsChunkedAndItsTrailersFollowTheLastChunk) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"));
  const std::int32_t id = server.requests.begin()->first;
  EXPECT_EQ(server.requests[id].body, "hi");
  server.respond(id, {{":status", "200"}, {"content-type", "application/grpc"}}, "xyz",
                 {{"grpc-status", "0"}, {"grpc-message", ""}});
  error_code ec;
  EXPECT_EQ(read_all(*s, ec),
            "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ntransfer-encoding: "
            "chunked\r\n\r\n3\r\nxyz\r\n0\r\ngrpc-status: 0\r\ngrpc-message: \r\n\r\n");
  EXPECT_EQ(ec, net::error::eof);
}

TEST_F(ClientConnectionTest, ATrailersOnlyResponseIsAHeadWithAnEmptyBody) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"));
  server.respond(server.requests.begin()->first,
                 {{":status", "200"}, {"content-type", "application/grpc"}, {"grpc-status", "5"}},
                 "");
  error_code ec;
  EXPECT_EQ(read_all(*s, ec),
            "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: "
            "5\r\ncontent-length: 0\r\n\r\n");
  EXPECT_EQ(ec, net::error::eof);
}

TEST_F(ClientConnectionTest, AResetBeforeTheResponseFailsTheReadAsAResetConnection) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  nghttp2_submit_rst_stream(server.session, NGHTTP2_FLAG_NONE, server.requests.begin()->first,
                            NGHTTP2_REFUSED_STREAM);
  error_code ec;
  EXPECT_EQ(read_all(*s, ec), "");
  EXPECT_EQ(ec, net::error::connection_reset);
  EXPECT_EQ(client->streams(), 0U);
}

TEST_F(ClientConnectionTest, AGoawayLetsTheAcceptedStreamsFinishAndRefusesTheRest) {
  auto first = client->open();
  auto second = client->open();
  ASSERT_TRUE(write(*first, "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(write(*second, "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_EQ(server.requests.size(), 2U);
  const std::int32_t accepted = server.requests.begin()->first;
  nghttp2_submit_goaway(server.session, NGHTTP2_FLAG_NONE, accepted, NGHTTP2_NO_ERROR, nullptr, 0);
  pump();
  EXPECT_TRUE(client->going_away());
  EXPECT_FALSE(client->can_open(100));
  EXPECT_EQ(client->open(), nullptr);
  error_code ec;
  EXPECT_EQ(read_all(*second, ec), "");  // above the last stream id: never processed
  EXPECT_EQ(ec, net::error::connection_reset);
  server.respond(accepted, {{":status", "204"}}, "");
  EXPECT_EQ(read_all(*first, ec), "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(ec, net::error::eof);
}

TEST_F(ClientConnectionTest, AStatusNoHttp11LineCanCarryResetsTheStream) {
  // Found by the h2_upstream_response fuzz target: nghttp2 lets ":status: 099" through.
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  const std::int32_t id = server.requests.begin()->first;
  server.respond(id, {{":status", "099"}}, "");
  error_code ec;
  EXPECT_EQ(read_all(*s, ec), "");
  EXPECT_EQ(ec, net::error::connection_reset);  // as a reset stream: 502 upstream_reset
  EXPECT_EQ(client->streams(), 0U);
}

TEST_F(ClientConnectionTest, ANoContentAnswerGetsNoBodyFramingWhateverFollowsIt) {
  // Found by the fuzz target: a 204 whose HEADERS did not end the stream was written chunked,
  // which no HTTP/1.1 reader accepts after a 204.
  auto s = client->open();
  ASSERT_TRUE(write(*s, "DELETE /x HTTP/1.1\r\nHost: h\r\n\r\n"));
  server.respond(server.requests.begin()->first, {{":status", "204"}}, "",
                 {{"x-after", "trailer"}});
  error_code ec;
  EXPECT_EQ(read_all(*s, ec), "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(ec, net::error::eof);
}

TEST_F(ClientConnectionTest, ClosingAStreamBeforeItsResponseResetsIt) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  const std::int32_t id = server.requests.begin()->first;
  s.reset();  // the exchange gave up (a deadline, the client went away)
  pump();
  EXPECT_TRUE(server.requests[id].closed);
  EXPECT_EQ(server.requests[id].error, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(client->streams(), 0U);
}

TEST_F(ClientConnectionTest, TheConnectionGoneFailsEveryPendingRead) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  bool completed = false;
  error_code got;
  std::array<char, 16> buffer{};
  s->read(net::buffer(buffer), ClientStream::Handler([&](error_code ec, std::size_t) {
            completed = true;
            got = ec;
          }));
  pump();
  EXPECT_FALSE(completed);
  client->abort();
  pump();
  EXPECT_TRUE(completed);
  EXPECT_EQ(got, net::error::connection_reset);
  EXPECT_TRUE(client->gone());
  EXPECT_FALSE(client->can_open(100));
}

TEST_F(ClientConnectionTest, ARequestForTheCurrentPeerLimitIsRefusedByCanOpen) {
  EXPECT_TRUE(client->can_open(1));
  auto s = client->open();
  EXPECT_FALSE(client->can_open(1));
  EXPECT_TRUE(client->can_open(2));
  s.reset();
  EXPECT_TRUE(client->can_open(1));
}

class ClientFlowControlTest : public ClientConnectionTest {
 protected:
  ClientFlowControlTest() : ClientConnectionTest(16384, true) {}
};

TEST_F(ClientFlowControlTest, AResponseArrivesOnlyAsFastAsItIsRead) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET /big HTTP/1.1\r\nHost: h\r\n\r\n"));
  const std::string body(2U << 20U, 'b');  // more than the stream and connection windows
  server.respond(server.requests.begin()->first,
                 {{":status", "200"}, {"content-length", std::to_string(body.size())}}, body);
  pump();
  // Nothing read yet: the backend stopped at the windows sluice advertised.
  EXPECT_LT(
      nghttp2_session_get_stream_remote_window_size(server.session, server.requests.begin()->first),
      1);
  error_code ec;
  const std::string response = read_all(*s, ec);
  EXPECT_EQ(ec, net::error::eof);
  EXPECT_EQ(response.substr(response.find("\r\n\r\n") + 4), body);
}

TEST_F(ClientFlowControlTest, AWriteWaitsWhileTheBodyAheadOfItCannotBeSent) {
  auto s = client->open();
  // The server's window is 16 KiB: a 200 KiB body stays buffered above kRequestBuffer.
  const std::string body(200U * 1024U, 'u');
  const std::string request =
      "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  EXPECT_FALSE(write(*s, request));
  const std::int32_t id = server.requests.begin()->first;
  EXPECT_LT(server.requests[id].body.size(), body.size());
  // The server reads: its WINDOW_UPDATEs let the rest go, and the write completes.
  std::size_t consumed = 0;
  for (int i = 0; i < 100 && !server.requests[id].ended; ++i) {
    nghttp2_session_consume(server.session, id, server.requests[id].body.size() - consumed);
    consumed = server.requests[id].body.size();
    pump();
  }
  EXPECT_EQ(server.requests[id].body, body);
  EXPECT_TRUE(server.requests[id].ended);
  EXPECT_TRUE(written);
}

TEST_F(ClientConnectionTest, ReadyCountsTheResponseBytesThatWaitToBeRead) {
  auto s = client->open();
  ASSERT_TRUE(write(*s, "GET /big HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(s->ready(), 0U);
  const std::string head = "HTTP/1.1 200 OK\r\ncontent-length: 10000\r\n\r\n";
  server.respond(server.requests.begin()->first, {{":status", "200"}, {"content-length", "10000"}},
                 std::string(10000, 'x'));
  pump();
  EXPECT_EQ(s->ready(), head.size() + 10000);
  std::array<char, 4096> chunk{};
  std::size_t got = 0;
  s->read(net::buffer(chunk), ClientStream::Handler([&](error_code, std::size_t n) { got = n; }));
  pump();
  EXPECT_EQ(got, chunk.size());
  EXPECT_EQ(s->ready(), head.size() + 10000 - chunk.size());
}

// The body relay's read size (proxy::relay_read_size, docs/grpc.md "Memory"): a socket's read
// asks for the most; an HTTP/2 stream's for what it holds, else the buffer's room, else 4 KiB.
TEST_F(ClientConnectionTest, TheRelayAsksAnHttp2StreamForWhatItHolds) {
  constexpr std::size_t kMost = 65536;
  boost::beast::flat_buffer buffer;
  proxy::UpstreamStream socket_stream(ioc.get_executor());
  EXPECT_EQ(proxy::relay_read_size(socket_stream, buffer, kMost), kMost);

  proxy::UpstreamStream h2_stream(ioc.get_executor());
  h2_stream.attach_h2(client->open());
  ClientStream& s = *h2_stream.h2();
  EXPECT_EQ(proxy::relay_read_size(h2_stream, buffer, kMost), 4096U);  // nothing yet
  buffer.prepare(10000);  // a buffer with room: its room
  EXPECT_EQ(proxy::relay_read_size(h2_stream, buffer, kMost), buffer.capacity());

  ASSERT_TRUE(write(s, "GET /big HTTP/1.1\r\nHost: h\r\n\r\n"));
  server.respond(server.requests.begin()->first, {{":status", "200"}, {"content-length", "100000"}},
                 std::string(100000, 'x'));
  pump();
  ASSERT_GT(s.ready(), buffer.capacity());
  EXPECT_EQ(proxy::relay_read_size(h2_stream, buffer, s.ready() + 1), s.ready());
  EXPECT_EQ(proxy::relay_read_size(h2_stream, buffer, kMost), std::min(kMost, s.ready()));
}

}  // namespace
}  // namespace sluice::http2
