// SPDX-License-Identifier: Apache-2.0
// Body framing through the HTTP/1 parser (chunked, length, until close): the input's first byte
// chooses the direction and how many bytes each read brings, the rest is the message. The
// parser's pieces must be views of the bytes it was given, and a length-delimited body must
// come out exactly as long as announced.
#include <string>
#include <string_view>

#include "gateway/http1/message_parser.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {
namespace {

template <bool IsRequest>
void parse_message(std::string_view message, std::size_t step) {
  http1::MessageParser<IsRequest> parser;
  boost::beast::error_code ec;
  std::size_t scanned = 0;
  const std::size_t head_end = http1::find_head_end(message, scanned);
  if (head_end == 0) {
    return;
  }
  const std::size_t used = parser.put(message.substr(0, head_end), ec);
  if (ec) {
    return;
  }
  SLUICE_FUZZ_CHECK(used == head_end && parser.head().size == head_end);
  const bool length_framed = parser.head().framing == http1::Framing::kContentLength;
  const std::uint64_t announced = parser.head().content_length;
  std::uint64_t body = 0;
  // Unconsumed bytes carried to the next read, as the session's buffer does.
  std::string pending;
  std::size_t next = head_end;
  bool waiting = false;  // the last put() asked for more bytes
  while (!parser.is_done()) {
    const std::string_view more = message.substr(std::min(next, message.size()), step);
    next += more.size();
    pending.append(more);
    const bool eof = next >= message.size();  // nothing more will arrive: the peer closes
    // Beast's contract: after need_more, put() again only with more bytes, and (a debug
    // assertion in its final-chunk parse) at least 5 of them: the session reads before it
    // parses again. When none will come, the message ends here.
    if (waiting && (more.empty() || pending.size() < 5)) {
      if (!eof) {
        continue;
      }
      parser.put_eof(ec);
      break;
    }
    const std::size_t n = parser.put(pending, ec);
    waiting = ec == boost::beast::http::error::need_more;
    if (waiting) {
      ec = {};
      if (eof) {
        parser.put_eof(ec);
        break;
      }
      continue;
    }
    if (ec) {
      return;
    }
    const std::string_view piece = parser.piece();
    SLUICE_FUZZ_CHECK(piece.empty() || (piece.data() >= pending.data() &&
                                        piece.data() + piece.size() <= pending.data() + n));
    body += piece.size();
    pending.erase(0, n);
    if (n == 0 && eof) {
      parser.put_eof(ec);
      break;
    }
  }
  if (!ec && parser.is_done() && length_framed) {
    SLUICE_FUZZ_CHECK(body == announced);
  }
}

}  // namespace

int chunked_body(Input input) {
  if (input.empty()) {
    return 0;
  }
  const std::size_t step = 1 + (input[0] & 0x3F);
  const std::string_view message = text_of(input.subspan(1));
  if ((input[0] & 0x80) != 0) {
    parse_message<true>(message, step);
  } else {
    parse_message<false>(message, step);
  }
  return 0;
}

}  // namespace sluice::fuzz
