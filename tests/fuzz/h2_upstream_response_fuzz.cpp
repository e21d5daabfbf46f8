// SPDX-License-Identifier: Apache-2.0
// An HTTP/2 backend's frames (docs/grpc.md): the input is everything the backend sends on one
// connection to sluice's client session, which has three requests on it (a GET, a chunked POST,
// a POST with a length). Whatever arrives, each stream gives the exchange a valid HTTP/1.1
// response or a prefix of one, and every read ends (the data, the end, or an error).
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <string>
#include <vector>

#include "gateway/http2/client_connection.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

struct NoHost final : http2::ClientHost {
  void on_output() override {}
};

/// Whether `bytes` is a complete HTTP/1.1 response or a valid prefix of one.
bool valid_response_prefix(const std::string& bytes) {
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  parser.body_limit(boost::none);
  error_code ec;
  std::size_t used = 0;
  while (used < bytes.size() && !parser.is_done()) {
    const std::size_t n = parser.put(net::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    if (ec == http::error::need_more) {
      return true;
    }
    if (ec || n == 0) {
      return !ec;
    }
  }
  return used == bytes.size();  // nothing after the end of the response
}

}  // namespace

int h2_upstream_response(Input input) {
  static constexpr std::array<std::string_view, 3> kRequests = {
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
      "POST /test.Echo/Bidi HTTP/1.1\r\nHost: h\r\nContent-Type: application/grpc\r\n"
      "Transfer-Encoding: chunked\r\n\r\n5\r\n\0\0\0\0\0\r\n",
      "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
  };
  net::io_context ioc;
  NoHost host;
  auto connection = std::make_shared<http2::ClientConnection>(host, ioc.get_executor(), false);
  std::vector<http2::ClientStreamPtr> streams;
  std::vector<std::string> got(kRequests.size());
  for (const std::string_view request : kRequests) {
    streams.push_back(connection->open());
    SLUICE_FUZZ_CHECK(streams.back() != nullptr);
    streams.back()->write(net::buffer(request.data(), request.size()),
                          http2::ClientStream::Handler([](error_code, std::size_t) {}));
  }
  std::string out;
  connection->send(out, std::size_t{1} << 20);  // the preface, SETTINGS and the requests
  // The backend's bytes in pieces of 1 to 64 (the input's own bytes choose), reading after each.
  std::vector<bool> ended(kRequests.size(), false);
  std::array<std::array<char, 512>, kRequests.size()> buffers{};
  std::vector<bool> pending(kRequests.size(), false);
  const auto read_all = [&] {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      while (!ended[i] && !pending[i]) {
        pending[i] = true;
        streams[i]->read(net::buffer(buffers[i]),
                         http2::ClientStream::Handler([&, i](error_code ec, std::size_t n) {
                           pending[i] = false;
                           got[i].append(buffers[i].data(), n);
                           ended[i] = static_cast<bool>(ec);
                         }));
        ioc.poll();
        ioc.restart();
      }
    }
  };
  const std::string_view bytes = text_of(input);
  for (std::size_t at = 0; at < bytes.size() && !connection->gone();) {
    const std::size_t piece = 1 + static_cast<unsigned char>(bytes[at]) % 64;
    if (!connection->receive(bytes.substr(at, piece))) {
      break;
    }
    at += piece;
    out.clear();
    connection->send(out, std::size_t{1} << 20);
    read_all();
  }
  connection->abort();  // the connection ends: every read still waiting ends too
  ioc.poll();
  ioc.restart();
  read_all();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    SLUICE_FUZZ_CHECK(ended[i]);
    SLUICE_FUZZ_CHECK(valid_response_prefix(got[i]));
  }
  return 0;
}

}  // namespace sluice::fuzz
