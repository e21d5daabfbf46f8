// SPDX-License-Identifier: Apache-2.0
#pragma once

// http2::Connection against libnghttp2's own client session, in memory, under a manual clock
// (docs/http2.md): the host that records requests and the fixture that moves
// frames both ways. Tests: connection_test.cpp (streams, bodies, flow control) and
// connection_protection_test.cpp (malformed requests, the reset budget, bounded header blocks,
// CONTINUATION, GOAWAY on shutdown).

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gateway/http2/connection.hpp"
#include "tests/support/h2_frame.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/unit/http2/h2_client_session.hpp"

namespace sluice::http2 {
namespace connection_support {
using namespace client_session_support;  // NOLINT(google-build-using-namespace)

namespace net = boost::asio;
using boost::system::error_code;

struct Host final : ConnectionHost {
  std::vector<Stream*> requests;
  void on_request(Stream& s) override { requests.push_back(&s); }
  void on_output() override {}
  void on_goaway_sent(std::uint32_t error_code, std::string_view reason) override {
    goaways.emplace_back(error_code, std::string(reason));
  }
  std::vector<std::pair<std::uint32_t, std::string>> goaways;  ///< what was sent, in order
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

}  // namespace connection_support
}  // namespace sluice::http2
