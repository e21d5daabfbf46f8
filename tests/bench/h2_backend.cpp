// SPDX-License-Identifier: Apache-2.0
// The backend of grpc_compare.sh (docs/benchmarks.md, "gRPC"): one thread, one port, HTTP/2 by
// prior knowledge (h2c) and HTTP/1.1 on the same port (a connection that starts with the HTTP/2
// preface is served as h2c), so proxies are compared over either protocol against the very same
// server. Every request is answered at once: a gRPC request (content-type application/grpc*)
// with its own body echoed as the response message and `grpc-status: 0` in the trailers, any
// other with 200 and "ok". libnghttp2 for HTTP/2, Beast for HTTP/1.1.
//
// usage: sluice-h2-backend PORT      (prints "listening 127.0.0.1:PORT")
#include <nghttp2/nghttp2.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using net::ip::tcp;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// One HTTP/2 connection: nghttp2's server session, fed by reads, flushed after each.
class H2Connection : public std::enable_shared_from_this<H2Connection> {
 public:
  explicit H2Connection(tcp::socket socket) : socket_(std::move(socket)) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, &H2Connection::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &H2Connection::on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Connection::on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, &H2Connection::on_close);
    nghttp2_session_server_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    const std::array<nghttp2_settings_entry, 2> settings{{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1U << 20U},
    }};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  }
  ~H2Connection() { nghttp2_session_del(session_); }
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  void start(std::string already) {
    if (!feed(already)) {
      return;
    }
    flush();
    read();
  }

 private:
  struct Request {
    bool grpc = false;
    std::string body;
    std::size_t sent = 0;
  };

  static H2Connection& self(void* user) { return *static_cast<H2Connection*>(user); }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* user) {
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == "content-type" && v.starts_with("application/grpc")) {
      self(user).requests_[frame->hd.stream_id].grpc = true;
    }
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                     std::size_t len, void* user) {
    self(user).requests_[id].body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int on_frame(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      self(user).respond(session, frame->hd.stream_id);
    }
    return 0;
  }
  static int on_close(nghttp2_session*, std::int32_t id, std::uint32_t, void* user) {
    self(user).requests_.erase(id);
    return 0;
  }

  void respond(nghttp2_session* session, std::int32_t id) {
    Request& r = requests_[id];
    static const std::string kOk = "ok";
    if (!r.grpc) {
      r.body = kOk;
    }
    const std::array<nghttp2_nv, 2> grpc_head{{
        nv(":status", "200"),
        nv("content-type", "application/grpc"),
    }};
    const std::array<nghttp2_nv, 2> plain_head{{nv(":status", "200"), nv("content-length", "2")}};
    nghttp2_data_provider provider{};
    provider.read_callback = [](nghttp2_session* s, std::int32_t stream, std::uint8_t* buf,
                                std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                void* user) -> ssize_t {
      Request& req = self(user).requests_[stream];
      const std::size_t n = std::min(length, req.body.size() - req.sent);
      std::memcpy(buf, req.body.data() + req.sent, n);
      req.sent += n;
      if (req.sent == req.body.size()) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (req.grpc) {
          *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
          const std::array<nghttp2_nv, 1> trailers{{nv("grpc-status", "0")}};
          nghttp2_submit_trailer(s, stream, trailers.data(), trailers.size());
        }
      }
      return static_cast<ssize_t>(n);
    };
    const auto& head = r.grpc ? grpc_head : plain_head;
    nghttp2_submit_response(session, id, head.data(), head.size(), &provider);
  }

  static nghttp2_nv nv(std::string_view name, std::string_view value) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
            value.size(), NGHTTP2_NV_FLAG_NONE};
  }

  bool feed(std::string_view bytes) {
    return nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                    bytes.size()) >= 0;
  }

  void read() {
    socket_.async_read_some(
        net::buffer(in_), [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
          if (ec || !self->feed({self->in_.data(), n})) {
            return;
          }
          self->flush();
          self->read();
        });
  }

  void flush() {
    if (writing_) {
      return;
    }
    out_.clear();
    for (;;) {
      const std::uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0) {
        break;
      }
      out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (out_.empty()) {
      return;
    }
    writing_ = true;
    net::async_write(socket_, net::buffer(out_),
                     [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (!ec) {
                         self->flush();
                       }
                     });
  }

  tcp::socket socket_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Request> requests_;
  std::array<char, 65536> in_{};
  std::string out_;
  bool writing_ = false;
};

/// One HTTP/1.1 connection: keep-alive, every request answered 200 "ok" (a gRPC one, whose
/// trailers HTTP/1.1 cannot carry without chunking, too: the HTTP/1.1 runs are plain requests).
class H1Connection : public std::enable_shared_from_this<H1Connection> {
 public:
  H1Connection(tcp::socket socket, std::string already) : socket_(std::move(socket)) {
    const auto n = already.size();
    net::buffer_copy(buffer_.prepare(n), net::buffer(already));
    buffer_.commit(n);
  }
  void start() { read(); }

 private:
  void read() {
    request_.emplace();
    request_->body_limit(boost::none);
    http::async_read(socket_, buffer_, *request_,
                     [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                       if (!ec) {
                         self->answer();
                       }
                     });
  }
  void answer() {
    response_ = {};
    response_.result(http::status::ok);
    response_.version(11);
    response_.body() = "ok";
    response_.keep_alive(request_->get().keep_alive());
    response_.prepare_payload();
    http::async_write(socket_, response_,
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        if (!ec && self->response_.keep_alive()) {
                          self->read();
                        }
                      });
  }

  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> request_;
  http::response<http::string_body> response_;
};

/// Reads the first bytes of a connection and hands it to the protocol they start.
void sniff(std::shared_ptr<tcp::socket> socket) {
  auto first = std::make_shared<std::string>();
  auto buffer = std::make_shared<std::array<char, 4096>>();
  auto step = std::make_shared<std::function<void()>>();
  *step = [socket, first, buffer, step] {
    socket->async_read_some(net::buffer(*buffer), [socket, first, buffer, step](
                                                      boost::system::error_code ec, std::size_t n) {
      if (ec) {
        *step = nullptr;
        return;
      }
      first->append(buffer->data(), n);
      const std::size_t compare = std::min(first->size(), kPreface.size());
      if (first->compare(0, compare, kPreface.substr(0, compare)) != 0) {
        std::make_shared<H1Connection>(std::move(*socket), std::move(*first))->start();
      } else if (first->size() >= kPreface.size()) {
        std::make_shared<H2Connection>(std::move(*socket))->start(std::move(*first));
      } else {
        (*step)();
        return;
      }
      *step = nullptr;
    });
  };
  (*step)();
}

void accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](boost::system::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true));
      sniff(std::make_shared<tcp::socket>(std::move(socket)));
    }
    accept(acceptor);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: sluice-h2-backend PORT\n";
    return 2;
  }
  net::io_context ioc(1);
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                            static_cast<std::uint16_t>(std::stoi(argv[1]))));
  std::cout << "listening 127.0.0.1:" << acceptor.local_endpoint().port() << std::endl;
  accept(acceptor);
  ioc.run();
}
