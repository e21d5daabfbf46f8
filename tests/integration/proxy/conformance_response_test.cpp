// SPDX-License-Identifier: Apache-2.0
// Message-head conformance of upstream responses (docs/http-conformance.md): each row scripts
// the upstream's raw answer to a plain request and checks the status, fields and body the
// client gets. Request rows and the fixture: conformance_test.cpp, conformance_fixture.hpp.
#include <string>
#include <vector>

#include "tests/integration/proxy/conformance_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace conformance_support;  // NOLINT(google-build-using-namespace)

using namespace std::string_literals;

const std::string kOversizedField(17 * 1024, 'x');  // past the gateway's 16 KiB response-head bound

std::vector<Row> response_rows() {
  const std::string get = "GET /r HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::string forwarded = up("GET /r HTTP/1.1\r\nHost: a\r\n");
  const auto reply = [](std::string bytes, bool close = false) {
    return RecordingUpstream::Reply{std::move(bytes), close};
  };
  return {
      {"response: Content-Length list of equal values becomes one",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\nabcd"),
       {{"Content-Length", {"4"}}},
       "abcd"},
      {"response: Content-Length repeated with equal values becomes one",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd"),
       {{"Content-Length", {"4"}}},
       "abcd"},
      {"response: Content-Length list of unequal values", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nContent-Length: 4, 5\r\n\r\nabcd")},
      {"response: CL and TE chunked", get, 502, To::kMain, forwarded, false,
       reply(
           "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
      {"response: TE of another coding beside CL", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd")},
      {"response: TE not ending in chunked is read until the upstream closes",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzipped-bytes", true),
       {{"Transfer-Encoding", {"gzip, chunked"}}, {"Content-Length", {}}},
       "zipped-bytes"},
      {"response: TE chunked then gzip (chunked would be applied twice)", get, 502, To::kMain,
       forwarded, false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\nmore", true)},
      {"response: TE list that does not parse", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked identity\r\n\r\n2\r\nok\r\n0\r\n\r\n")},
      {"response: TE lines are forwarded as one line of sluice's",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding:  Chunked\r\n\r\n"
             "2\r\nok\r\n0\r\n\r\n"),
       {{"Transfer-Encoding", {"gzip, chunked"}}},
       "ok"},
      {"response: TE chunked twice", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
             "0\r\n\r\n")},
      {"response: Content-Length with a sign", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok")},
      {"response: bare LF line ends", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\nContent-Length: 2\n\nok")},
      {"response: a bad chunk size before any byte went", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n")},
      {"response: TE on HTTP/1.0", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
      {"response: a bad status line", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n")},
      {"response: NUL in a field", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 0\r\n\r\n"s)},
      {"response: CR in a field", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n")},
      {"response: an oversized head", get, 502, To::kMain, forwarded, false,
       reply("HTTP/1.1 200 OK\r\nX-Big: " + kOversizedField + "\r\nContent-Length: 0\r\n\r\n")},
      {"response: obs-fold is replaced by a space",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok"),
       {{"X-Folded", {"a b"}}},
       "ok"},
      {"response: obs-fold with an empty first line is unfolded too",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nContent-Length:\r\n 6\r\nX-Folded:\r\n\tb\r\n\r\nfolded"),
       {{"Content-Length", {"6"}}, {"X-Folded", {"b"}}},
       "folded"},
      {"response: an interim 103 is skipped",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2"
             "\r\n\r\nok"),
       {},
       "ok"},
      {"response: 101 to a request that asked for no upgrade", get, 502, To::kMain, forwarded,
       false,
       reply("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n")},
      {"response: a hop-by-hop field named by Connection is removed",
       get,
       200,
       To::kMain,
       forwarded,
       false,
       reply("HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
             "Content-Length: 2\r\n\r\nok"),
       {{"X-Hop", {}}, {"Keep-Alive", {}}},
       "ok"},
  };
}

TEST_F(ConformanceTest, ResponseHeadRules) {
  SluiceProcess gateway(config);
  for (const Row& row : response_rows()) {
    run(row, gateway.proxy_port());
  }
}

}  // namespace
}  // namespace sluice::testing
