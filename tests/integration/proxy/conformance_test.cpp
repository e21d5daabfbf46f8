// SPDX-License-Identifier: Apache-2.0
// Message-head conformance, one row per rule and per known desync shape (docs/http-conformance.md):
// raw bytes in on the data port of the real binary, and out either the exact bytes a recording
// upstream receives, or the status the client gets, with whether the connection closes. Every
// row states what must reach the upstream: nothing at all when the head is refused. Response
// rows: conformance_response_test.cpp.
#include <string>
#include <vector>

#include "tests/integration/proxy/conformance_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace conformance_support;  // NOLINT(google-build-using-namespace)

using namespace std::string_literals;

std::vector<Row> request_rows() {
  return {
      // -- Host (RFC 9112 §3.2, RFC 9110 §7.2) -------------------------------------------------
      {"one valid Host is forwarded as sent", "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n", 200,
       To::kMain, up("GET /x HTTP/1.1\r\nHost: a.test\r\n")},
      {"two equal Host lines", "GET /x HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n", 400},
      {"two Host lines (host confusion)",
       "GET /x HTTP/1.1\r\nHost: api.example.test\r\nHost: other\r\n\r\n", 400},
      {"HTTP/1.1 without Host", "GET /x HTTP/1.1\r\nA: b\r\n\r\n", 400},
      {"Host with a space", "GET /x HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
      {"Host with userinfo", "GET /x HTTP/1.1\r\nHost: user@evil.example\r\n\r\n", 400},
      {"Host with a path", "GET /x HTTP/1.1\r\nHost: evil.example/x\r\n\r\n", 400},
      {"Host with DEL", "GET /x HTTP/1.1\r\nHost: evil\x7f.example\r\n\r\n", 400},
      {"Host with two ports", "GET /x HTTP/1.1\r\nHost: evil.example:80:80\r\n\r\n", 400},
      {"Host with a bad port", "GET /x HTTP/1.1\r\nHost: evil.example:8o\r\n\r\n", 400},
      {"Host percent-encoded", "GET /x HTTP/1.1\r\nHost: api%2eexample.test\r\n\r\n", 400},
      {"Host with a backslash", "GET /x HTTP/1.1\r\nHost: evil.example\\api\r\n\r\n", 400},
      {"Host IP-literal with a zone", "GET /x HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n", 400},
      {"Host IPv6 literal with port", "GET /x HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200, To::kMain,
       up("GET /x HTTP/1.1\r\nHost: [::1]:8080\r\n")},
      {"Host empty (the grammar allows it)", "GET /x HTTP/1.1\r\nHost:\r\n\r\n", 200, To::kMain,
       up("GET /x HTTP/1.1\r\nHost:\r\n")},
      {"Host in another case routes by host", "GET /x HTTP/1.1\r\nHost: API.Example.TEST\r\n\r\n",
       200, To::kApi, up("GET /x HTTP/1.1\r\nHost: API.Example.TEST\r\n")},
      {"Host with a port routes by host", "GET /x HTTP/1.1\r\nHost: api.example.test:8080\r\n\r\n",
       200, To::kApi, up("GET /x HTTP/1.1\r\nHost: api.example.test:8080\r\n")},
      {"Host fully qualified routes by host", "GET /x HTTP/1.1\r\nHost: api.example.test.\r\n\r\n",
       200, To::kApi, up("GET /x HTTP/1.1\r\nHost: api.example.test.\r\n")},
      {"HTTP/1.0 without Host gets an empty Host upstream", "GET /x HTTP/1.0\r\nA: b\r\n\r\n", 200,
       To::kMain, up("GET /x HTTP/1.1\r\nHost: \r\nA: b\r\n"), true},
      {"HTTP/1.0 with two Host lines", "GET /x HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"HTTP/1.0 with a bad Host", "GET /x HTTP/1.0\r\nHost: a b\r\n\r\n", 400},

      // -- absolute-form (RFC 9112 §3.2.2): its authority routes and goes upstream ------------
      {"absolute-form routes by its authority, not Host",
       "GET http://api.example.test/x HTTP/1.1\r\nHost: other.example\r\n\r\n", 200, To::kApi,
       up("GET /x HTTP/1.1\r\nHost: api.example.test\r\n")},
      {"absolute-form cannot borrow a host route",
       "GET http://other.example/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n", 200, To::kMain,
       up("GET /x HTTP/1.1\r\nHost: other.example\r\n")},
      {"absolute-form https, any case, port and query",
       "GET HTTPS://api.example.test:8443/x?q=1 HTTP/1.1\r\nHost: x\r\nA: b\r\n\r\n", 200, To::kApi,
       up("GET /x?q=1 HTTP/1.1\r\nHost: api.example.test:8443\r\nA: b\r\n")},
      {"absolute-form without a path (a slash in the query is no path)",
       "GET http://api.example.test?next=/admin HTTP/1.1\r\nHost: x\r\n\r\n", 200, To::kApi,
       up("GET /?next=/admin HTTP/1.1\r\nHost: api.example.test\r\n")},
      {"absolute-form path is normalized",
       "GET http://api.example.test/a/../%78 HTTP/1.1\r\nHost: x\r\n\r\n", 200, To::kApi,
       up("GET /x HTTP/1.1\r\nHost: api.example.test\r\n")},
      {"absolute-form with userinfo", "GET http://u@api.example.test/x HTTP/1.1\r\nHost: x\r\n\r\n",
       400},
      {"absolute-form with an empty host", "GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"absolute-form with a bad authority", "GET http://a:1:2/x HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"absolute-form of another scheme",
       "GET ftp://api.example.test/x HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"absolute-form still needs Host on HTTP/1.1",
       "GET http://api.example.test/x HTTP/1.1\r\n\r\n", 400},

      // -- other target forms ----------------------------------------------------------------
      {"CONNECT is not implemented", "CONNECT api.example.test:443 HTTP/1.1\r\nHost: x\r\n\r\n",
       501, To::kNone, "", true},
      {"CONNECT with a bad Host is 400 first",
       "CONNECT api.example.test:443 HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
      {"authority-form without CONNECT", "GET api.example.test:443 HTTP/1.1\r\nHost: x\r\n\r\n",
       400},
      {"OPTIONS * goes to a route that names OPTIONS",
       "OPTIONS * HTTP/1.1\r\nHost: opt.example.test\r\n\r\n", 200, To::kMain,
       up("OPTIONS * HTTP/1.1\r\nHost: opt.example.test\r\n")},
      {"OPTIONS * with no such route", "OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", 404},
      {"asterisk-form without OPTIONS", "GET * HTTP/1.1\r\nHost: opt.example.test\r\n\r\n", 400},
      {"a fragment in the target", "GET /x#frag HTTP/1.1\r\nHost: a\r\n\r\n", 400},

      // -- Content-Length and Transfer-Encoding (RFC 9112 §6) ---------------------------------
      {"Content-Length list of equal values becomes one",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 4\r\n\r\nabcd", 200, To::kMain,
       up("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n", "abcd")},
      {"Content-Length repeated with equal values becomes one",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd", 200,
       To::kMain, up("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n", "abcd")},
      {"Content-Length list of unequal values",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 5\r\n\r\nabcde", 400},
      {"Content-Length repeated with unequal values",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400},
      {"Content-Length with a sign",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +4\r\n\r\nabcd", 400},
      {"Content-Length empty list element",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4,,4\r\n\r\nabcd", 400},
      {"CL.TE",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
       "0\r\n\r\n",
       400},
      {"TE.CL",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
       "0\r\n\r\n",
       400},
      {"TE of another coding beside CL",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd",
       400},
      {"TE not ending in chunked",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nab", 400},
      {"TE chunked then another coding",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked twice",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
       "\r\n\r\n0\r\n\r\n",
       400},
      {"TE on HTTP/1.0, and the request after it is never read",
       "POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
       "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
       400},
      {"TE with a space before the colon",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400},
      {"chunked body is forwarded re-framed",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "2;ext=1\r\nab\r\n2\r\ncd\r\n0\r\nTrailer-Field: t\r\n\r\n",
       200, To::kMain,
       up("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n",
          "2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n")},
      {"TE list with two codings and no comma",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked identity\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked with a parameter",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x\r\n\r\n0\r\n\r\n", 400},
      {"TE list with a quoted element",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, \"x\"\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked with a slash",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked/1.1\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked with obs-text",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\xff\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked chunked without a comma",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked chunked\r\n\r\n0\r\n\r\n", 400},
      {"TE empty line then chunked",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\nTransfer-Encoding: chunked\r\n\r\n"
       "0\r\n\r\n",
       400},
      {"TE identity then chunked on two lines is forwarded as one line",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\nA: b\r\n"
       "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
       200, To::kMain,
       up("POST /x HTTP/1.1\r\nHost: a\r\nA: b\r\nTransfer-Encoding: identity, chunked\r\n",
          "2\r\nab\r\n0\r\n\r\n")},
      {"TE in another spelling is forwarded as sluice writes it",
       "POST /x HTTP/1.1\r\nHost: a\r\ntransfer-encoding:  gzip ,Chunked \r\n\r\n0\r\n\r\n", 200,
       To::kMain,
       up("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n")},
      {"obs-fold in a request", "GET /x HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400},
      {"obs-fold with an empty first line: Transfer-Encoding (and the smuggled request)",
       "POST /c HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
       "2b\r\nGET /SMUGGLED HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n\r\n0\r\n\r\n",
       400},
      {"obs-fold with an empty first line: Content-Length",
       "POST /c HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length:\r\n 43\r\n\r\n"
       "GET /SMUGGLED HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
       400},
      {"obs-fold with an empty first line and a tab",
       "POST /c HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding:\r\n\tchunked\r\n\r\n0\r\n\r\n",
       400},
      {"obs-fold with an empty first line: Host",
       "GET /x HTTP/1.1\r\nHost:\r\n other.example\r\n\r\n", 400},
      {"one empty line before the request line is ignored",
       "\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n", 200, To::kMain,
       up("GET /x HTTP/1.1\r\nHost: a\r\n")},
      {"two empty lines before the request line", "\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
       400},
      {"NUL in a field value", "GET /x HTTP/1.1\r\nHost: a\r\nX-A: b\0c\r\n\r\n"s, 400},
      {"bare LF line ends", "GET /x HTTP/1.1\nHost: a\n\n", 400},
  };
}

TEST_F(ConformanceTest, RequestHeadRules) {
  SluiceProcess gateway(config);
  const std::vector<Row> rows = request_rows();
  EXPECT_GE(rows.size(), 40U);
  for (const Row& row : rows) {
    run(row, gateway.proxy_port());
  }
}

TEST_F(ConformanceTest, WhatIsJudgedIsWhatIsForwarded) {
  // The api route's limit allows one request per client. Dodging it by naming another host in
  // Host while the target's authority (what the backend serves) says api.example.test fails:
  // the absolute-form request is judged by the api route, so it is the one that gets 429.
  config["identity"] = json::array({json{{"client_ip", true}}});
  config["limits"] = {{"one", {{"requests", 1}, {"window_ms", 60000}, {"buckets", 60}}}};
  config["routes"][0]["limit"] = "one";
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw("GET /a HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
  ASSERT_EQ(client.read_response()->result_int(), 200);
  client.send_raw("GET http://api.example.test/b HTTP/1.1\r\nHost: other.example\r\n\r\n");
  const auto limited = client.read_response();
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->result_int(), 429);
  EXPECT_EQ(error_code(*limited), "rate_limited");
  // And the other way round: a request for another host that names api.example.test in Host
  // is not the api route's, and is not charged to it.
  client.send_raw("GET http://other.example/c HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
  EXPECT_EQ(client.read_response()->result_int(), 200);
  ASSERT_TRUE(api.wait_for_requests(1));
  ASSERT_TRUE(main.wait_for_requests(1));
  EXPECT_EQ(api.request_count(), 1U);
  EXPECT_TRUE(recorded(main, 0).starts_with("GET /c HTTP/1.1\r\nHost: other.example\r\n"));
}

}  // namespace
}  // namespace sluice::testing
