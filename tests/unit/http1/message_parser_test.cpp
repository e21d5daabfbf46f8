// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/message_parser.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <boost/beast/http/error.hpp>
#include <new>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::http1 {
namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

/// Parses a whole head from `text` with a fresh parser; the text must outlive the parser's use.
template <bool IsRequest>
std::size_t parse_head(MessageParser<IsRequest>& parser, std::string_view text, error_code& ec) {
  std::size_t scanned = 0;
  const std::size_t end = find_head_end(text, scanned);
  EXPECT_NE(end, 0U) << "no complete head in: " << text;
  return parser.put(text.substr(0, end), ec);
}

TEST(FindHeadEndTest, FindsTheEmptyLineOnceItHasArrived) {
  std::size_t scanned = 0;
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n", scanned), 0U);
  EXPECT_EQ(scanned, 25U);
  // The terminator split across reads: the scan resumes just before where it stopped.
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r", scanned), 0U);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY", scanned), 27U);
  scanned = 0;
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\n\nX", scanned), 16U);  // LF-only: the parser judges
  scanned = 0;
  EXPECT_EQ(find_head_end("", scanned), 0U);
}

TEST(MessageParserTest, RecordsTheRequestLineAndFieldsAsViewsOfTheInput) {
  const std::string text =
      "POST /api/users?x=1 HTTP/1.1\r\nHost: api.example\r\nX-API-Key:  key-1 \r\n"
      "Content-Length: 5\r\n\r\nhello";
  RequestParser parser;
  error_code ec;
  const std::size_t used = parse_head(parser, text, ec);
  ASSERT_FALSE(ec) << ec.message();
  const RequestHead& head = parser.head();
  EXPECT_EQ(used, text.size() - 5);
  EXPECT_EQ(head.size, used);
  EXPECT_EQ(head.base, text.data());
  EXPECT_EQ(head.verb, http::verb::post);
  EXPECT_EQ(head.method, "POST");
  EXPECT_EQ(head.target, "/api/users?x=1");
  EXPECT_EQ(head.version, 11U);
  ASSERT_EQ(head.fields.size(), 3U);
  EXPECT_EQ(head.fields[1].name, "X-API-Key");
  EXPECT_EQ(head.fields[1].value, "key-1");  // surrounding whitespace is not part of the value
  EXPECT_EQ(head.raw_line(head.fields[1]), "X-API-Key:  key-1 \r\n");
  EXPECT_EQ(head.raw_line(head.fields[2]), "Content-Length: 5\r\n");
  EXPECT_GE(head.fields[0].value.data(), text.data());  // a view, not a copy
  EXPECT_LT(head.fields[0].value.data(), text.data() + text.size());
  EXPECT_EQ(head.framing, Framing::kContentLength);
  EXPECT_EQ(head.content_length, 5U);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_FALSE(parser.is_done());
  // The body comes out as a view too.
  const std::size_t body = parser.put(std::string_view(text).substr(used), ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(body, 5U);
  EXPECT_EQ(parser.piece(), "hello");
  EXPECT_TRUE(parser.is_done());
}

TEST(MessageParserTest, FieldLookupIsCaseInsensitiveByNameAndByEnum) {
  const std::string text =
      "GET / HTTP/1.1\r\nhost: a\r\nX-Forwarded-For: 1.1.1.1\r\nx-forwarded-for: 2.2.2.2\r\n\r\n";
  RequestParser parser;
  error_code ec;
  parse_head(parser, text, ec);
  ASSERT_FALSE(ec);
  const FieldList& f = parser.head().fields;
  EXPECT_EQ(f.value(http::field::host), "a");
  EXPECT_EQ(f.count("X-FORWARDED-FOR"), 2U);
  ASSERT_NE(f.find("x-forwarded-for"), nullptr);
  EXPECT_EQ(f.find("x-forwarded-for")->value, "1.1.1.1");
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.value(http::field::authorization), "");
}

TEST(MessageParserTest, KnowsEachFraming) {
  struct Case {
    std::string text;
    Framing framing;
    bool keep_alive;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", Framing::kNone, true},
      {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", Framing::kNone, false},
      {"GET / HTTP/1.0\r\n\r\n", Framing::kNone, false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", Framing::kNone, true},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", Framing::kNone, true},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", Framing::kChunked, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    RequestParser parser;
    error_code ec;
    parse_head(parser, c.text, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(parser.head().framing, c.framing);
    EXPECT_EQ(parser.head().keep_alive, c.keep_alive);
  }
}

TEST(MessageParserTest, AResponseDelimitedByClosingEndsAtEof) {
  const std::string text = "HTTP/1.1 200 OK\r\nServer: x\r\n\r\n";
  ResponseParser parser;
  error_code ec;
  parse_head(parser, text, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(parser.head().status, 200U);
  EXPECT_EQ(parser.head().reason, "OK");
  EXPECT_EQ(parser.head().framing, Framing::kUntilClose);
  parser.put("abc", ec);
  EXPECT_EQ(parser.piece(), "abc");
  EXPECT_FALSE(parser.is_done());
  parser.put_eof(ec);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(parser.is_done());
}

TEST(MessageParserTest, ResponsesWithoutABodyAreDoneAfterTheHead) {
  for (const std::string text : {"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
                                 "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
                                 "HTTP/1.1 100 Continue\r\n\r\n"}) {
    SCOPED_TRACE(text);
    ResponseParser parser;
    error_code ec;
    parse_head(parser, text, ec);
    ASSERT_FALSE(ec);
    EXPECT_TRUE(parser.is_done());
    EXPECT_EQ(parser.head().framing, Framing::kNone);
  }
  ResponseParser head_response;
  head_response.skip(true);  // the answer to HEAD
  error_code ec;
  parse_head(head_response, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", ec);
  EXPECT_TRUE(head_response.is_done());
}

TEST(MessageParserTest, ChunkedBodiesComeOutAsPiecesAndTrailersAreDropped) {
  const std::string text =
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer-Field: x\r\n\r\n";
  RequestParser parser;
  error_code ec;
  std::size_t at = parse_head(parser, text, ec);
  ASSERT_FALSE(ec);
  std::string body;
  while (!parser.is_done()) {
    const std::size_t n = parser.put(std::string_view(text).substr(at), ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_GT(n, 0U);
    at += n;
    body += parser.piece();
  }
  EXPECT_EQ(body, "abcde");
  EXPECT_EQ(at, text.size());
  EXPECT_EQ(parser.head().fields.size(), 2U);  // the trailer did not join the head
  EXPECT_EQ(parser.trailers().size(), 0U);     // a request's trailers are dropped
}

TEST(MessageParserTest, AResponseKeepsItsForwardableTrailersAsViews) {
  const std::string text =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\ngrpc-status: 0\r\nSet-Cookie: s=1\r\nKeep-Alive: x\r\n"
      "grpc-message: ok\r\n\r\n";
  ResponseParser parser;
  error_code ec;
  std::size_t at = parse_head(parser, text, ec);
  ASSERT_FALSE(ec);
  while (!parser.is_done()) {
    const std::size_t n = parser.put(std::string_view(text).substr(at), ec);
    ASSERT_FALSE(ec) << ec.message();
    at += n;
  }
  ASSERT_EQ(parser.trailers().size(), 2U);  // not Set-Cookie, not Keep-Alive
  EXPECT_EQ(parser.trailers()[0].name, "grpc-status");
  EXPECT_EQ(parser.trailers()[0].value, "0");
  EXPECT_EQ(parser.trailers()[1].name, "grpc-message");
  EXPECT_EQ(parser.trailers()[1].value, "ok");
  EXPECT_EQ(parser.head().fields.size(), 1U);
}

TEST(MessageParserTest, RefusesFoldedFieldsInARequestAndUnfoldsThemInAResponse) {
  RequestParser request;
  error_code ec;
  parse_head(request, "GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n two\r\n\r\n", ec);
  EXPECT_TRUE(ec);
  const std::string text =
      "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nX-B: b\r\nContent-Length: 0\r\n\r\n";
  ResponseParser response;
  ec = {};
  parse_head(response, text, ec);
  ASSERT_FALSE(ec) << ec.message();
  const FieldList& f = response.head().fields;
  ASSERT_EQ(f.size(), 3U);
  EXPECT_FALSE(f[0].raw);
  EXPECT_EQ(f[0].value, "one two");
  EXPECT_TRUE(f[1].raw);
  EXPECT_EQ(response.head().raw_line(f[1]), "X-B: b\r\n");
}

TEST(MessageParserTest, EnforcesTheHeaderAndBodyLimits) {
  RequestParser parser;
  parser.header_limit(64);
  error_code ec;
  parse_head(parser, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(100, 'b') + "\r\n\r\n",
             ec);
  EXPECT_EQ(ec, http::error::header_limit);
  RequestParser limited;
  limited.body_limit(10);
  ec = {};
  parse_head(limited, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", ec);
  EXPECT_EQ(ec, http::error::body_limit);
}

TEST(MessageParserTest, RejectsWhatBeastRejects) {
  for (const std::string text :
       {"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n", "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n", "HELLO\r\n\r\n"}) {
    SCOPED_TRACE(text);
    RequestParser parser;
    error_code ec;
    parse_head(parser, text, ec);
    EXPECT_TRUE(ec);
  }
}

TEST(MessageParserTest, RefusesTransferEncodingWhereRfc9112SaysTheFramingIsFaulty) {
  // Beast itself catches Content-Length after "chunked"; these orders and cases are ours.
  for (const std::string text :
       {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 5\r\n\r\n"}) {
    SCOPED_TRACE(text);
    RequestParser parser;
    error_code ec;
    parse_head(parser, text, ec);
    EXPECT_TRUE(ec);
  }
  for (const std::string text :
       {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n",
        "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 4, 5\r\n\r\n"}) {
    SCOPED_TRACE(text);
    ResponseParser parser;
    error_code ec;
    parse_head(parser, text, ec);
    EXPECT_TRUE(ec);
  }
}

TEST(MessageParserTest, AResponseWithoutChunkedEndsWhenTheServerCloses) {
  for (const std::string text : {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                                 "HTTP/1.1 200 OK\r\nTransfer-Encoding: x-a\r\n"
                                 "Transfer-Encoding: GZIP\r\n\r\n"}) {
    SCOPED_TRACE(text);
    ResponseParser parser;
    error_code ec;
    parse_head(parser, text, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(parser.head().framing, Framing::kUntilClose);
  }
}

TEST(MessageParserTest, AResponseWithChunkedBeforeAnotherCodingIsRefused) {
  // Forwarding it would take chunked applied twice (RFC 9112 §6.1).
  ResponseParser parser;
  error_code ec;
  parse_head(parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", ec);
  EXPECT_EQ(ec, http::error::bad_transfer_encoding);
}

TEST(MessageParserTest, EveryTransferEncodingLineIsReadAsOneStrictList) {
  const auto codings = [](const std::string& fields) -> std::string {
    RequestParser parser;
    error_code ec;
    const std::string text = "POST / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n";
    parse_head(parser, text, ec);
    if (ec) {
      return "<" + ec.message() + ">";
    }
    EXPECT_EQ(parser.head().framing, Framing::kChunked);
    return std::string(parser.head().transfer_codings);
  };
  EXPECT_EQ(codings("Transfer-Encoding: chunked\r\n"), "chunked");
  EXPECT_EQ(codings("Transfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n"), "gzip, chunked");
  EXPECT_EQ(codings("Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n"),
            "identity, chunked");
  const std::string refused = "<" + error_code(http::error::bad_transfer_encoding).message() + ">";
  for (const std::string bad : {"chunked identity", "chunked;x", "chunked, \"x\"", "chunked/1.1",
                                "chunked\xff", "chunked chunked", "chunked, chunked"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(codings("Transfer-Encoding: " + bad + "\r\n"), refused);
  }
  EXPECT_EQ(codings("Transfer-Encoding:\r\nTransfer-Encoding: chunked\r\n"), refused);
  EXPECT_EQ(codings("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n"), refused);
}

TEST(MessageParserTest, AResponsesMalformedTransferEncodingIsRefused) {
  for (const std::string bad : {"chunked identity", "chunked;x", "gzip chunked", ""}) {
    SCOPED_TRACE(bad);
    ResponseParser parser;
    error_code ec;
    const std::string text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: " + bad + "\r\n\r\n";
    parse_head(parser, text, ec);
    EXPECT_EQ(ec, http::error::bad_transfer_encoding);
  }
}

TEST(MessageParserTest, AFoldWithAnEmptyFirstLineIsStillAFoldInARequest) {
  // Beast hands back the continuation line itself as the value here: only the raw bytes show
  // the fold.
  for (const std::string field :
       {"Transfer-Encoding:\r\n chunked", "Content-Length:\r\n 43", "Host:\r\n other.example",
        "X-A:\r\n\tb", "X-A: \r\n \r\n b", "X-A:\r\n \r\n"}) {
    SCOPED_TRACE(field);
    RequestParser parser;
    error_code ec;
    const std::string text = "POST /c HTTP/1.1\r\nX-B: c\r\n" + field + "\r\n\r\n";
    parse_head(parser, text, ec);
    EXPECT_EQ(ec, http::error::bad_value);
  }
}

TEST(MessageParserTest, AResponseFoldWithAnEmptyFirstLineIsUnfolded) {
  const std::string text =
      "HTTP/1.1 200 OK\r\nContent-Length:\r\n 6\r\nX-A:\r\n\tb\r\nX-C: c\r\n\r\n";
  ResponseParser parser;
  error_code ec;
  parse_head(parser, text, ec);
  ASSERT_FALSE(ec) << ec.message();
  const ResponseHead& head = parser.head();
  ASSERT_EQ(head.fields.size(), 3U);
  EXPECT_EQ(head.fields[0].value, "6");
  EXPECT_FALSE(head.fields[0].raw);  // written anew, on one line
  EXPECT_EQ(head.fields[1].value, "b");
  EXPECT_FALSE(head.fields[1].raw);
  EXPECT_TRUE(head.fields[2].raw);
  EXPECT_EQ(head.framing, Framing::kContentLength);
  EXPECT_EQ(head.content_length, 6U);
}

TEST(MessageParserTest, AContentLengthListOfEqualValuesIsOneLength) {
  RequestParser parser;
  error_code ec;
  parse_head(parser,
             "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 4\r\nContent-Length: 4\r\n\r\n", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(parser.head().framing, Framing::kContentLength);
  EXPECT_EQ(parser.head().content_length, 4U);
}

// The inline fields are left unset until pushed (docs/architecture.md, "One request, one
// context"): what was pushed reads back, through copies, moves and a clear.
TEST(FieldListTest, PushedFieldsReadBackThroughCopiesMovesAndClear) {
  FieldList list;
  const std::string names = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (std::size_t i = 0; i < FieldList::kInline + 5; ++i) {
    list.push_back({.id = http::field::unknown,
                    .name = std::string_view(names).substr(i, 1),
                    .value = "v",
                    .line_begin = static_cast<std::uint32_t>(i),
                    .line_end = static_cast<std::uint32_t>(i + 1),
                    .raw = i % 2 == 0});
  }
  const FieldList copy = list;
  FieldList moved = std::move(list);
  for (const FieldList* l : {&copy, static_cast<const FieldList*>(&moved)}) {
    ASSERT_EQ(l->size(), FieldList::kInline + 5);
    for (std::size_t i = 0; i < l->size(); ++i) {
      EXPECT_EQ((*l)[i].name, std::string_view(names).substr(i, 1));
      EXPECT_EQ((*l)[i].line_begin, i);
      EXPECT_EQ((*l)[i].raw, i % 2 == 0);
    }
  }
  EXPECT_EQ(copy.find("c")->line_end, 3U);
  moved.clear();
  EXPECT_TRUE(moved.empty());
  EXPECT_EQ(moved.find("a"), nullptr);
  moved.push_back({.id = http::field::host, .name = "Host", .value = "h"});
  EXPECT_EQ(moved.value(http::field::host), "h");
  EXPECT_EQ(moved.size(), 1U);
}

TEST(MessageParserTest, ManyFieldsSpillPastTheInlineCapacity) {
  std::string text = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 50; ++i) {
    text += "X-F" + std::to_string(i) + ": v" + std::to_string(i) + "\r\n";
  }
  text += "\r\n";
  RequestParser parser;
  error_code ec;
  parse_head(parser, text, ec);
  ASSERT_FALSE(ec);
  const FieldList& f = parser.head().fields;
  ASSERT_EQ(f.size(), 50U);
  EXPECT_EQ(f[49].value, "v49");
  EXPECT_EQ(parser.head().raw_line(f[40]), "X-F40: v40\r\n");
  EXPECT_NE(f.find("X-F45"), nullptr);
}

/// How many bytes of a parser made by value-initialization, as `std::optional::emplace()` makes
/// it, are still the pattern its storage held before: the bytes the making did not write.
template <class Parser>
std::size_t bytes_left_unwritten() {
  constexpr unsigned char kPattern = 0xA5;
  alignas(Parser) std::array<unsigned char, sizeof(Parser)> storage{};
  storage.fill(kPattern);
  // The compiler may treat stores before an object's making as dead (GCC's lifetime DSE) and
  // reads of bytes the making left as anything: these barriers keep both as written.
  asm volatile("" : : "r"(storage.data()) : "memory");                 // NOLINT(hicpp-no-assembler)
  auto* parser = ::new (static_cast<void*>(storage.data())) Parser();  // value-initialization
  asm volatile("" : : "r"(storage.data()) : "memory");                 // NOLINT(hicpp-no-assembler)
  // Reading the object's bytes is what this test is about: the inline field slots are meant
  // to be left as they were (FieldList), so their bytes must still be the pattern.
  const auto untouched =
      static_cast<std::size_t>(std::count(storage.begin(), storage.end(), kPattern));
  parser->~Parser();
  return untouched;
}

TEST(MessageParserTest, MakingAParserLeavesTheInlineFieldSlotsUnwritten) {
  // Two lists of 32 inline fields per parser (the head's and the trailers'): 3.6 KiB of the
  // 3.9 that a zero-filling value-initialization wrote for every message until 2026-12-01.
  constexpr std::size_t kSlots = 2 * FieldList::kInline * sizeof(FieldRef);
  EXPECT_GE(bytes_left_unwritten<RequestParser>(), kSlots * 9 / 10);
  EXPECT_GE(bytes_left_unwritten<ResponseParser>(), kSlots * 9 / 10);
  // And a parser so made works like any other.
  std::optional<RequestParser> made;
  made.emplace();
  error_code ec;
  parse_head(*made, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(made->head().fields.size(), 1U);
}

}  // namespace
}  // namespace sluice::http1
