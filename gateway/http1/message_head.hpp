// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gateway/http1/field_list.hpp"

namespace sluice::http1 {

/// How a message's body is delimited (RFC 9112 §6.3).
enum class Framing {
  kNone,           ///< no body (a request without Content-Length or Transfer-Encoding; 204, 304,
                   ///< a response to HEAD)
  kContentLength,  ///< exactly `content_length` bytes
  kChunked,        ///< Transfer-Encoding ending in chunked
  kUntilClose,     ///< a response delimited by the server closing the connection
};

/// What a parsed head says about its message, common to requests and responses. Every view
/// points into the buffer the head was parsed from (`base`), which must not be modified or
/// consumed while the head is in use.
struct HeadCommon {
  const char* base = nullptr;  ///< the head's first byte
  std::size_t size = 0;        ///< the head's length, its final CRLF included
  unsigned version = 11;       ///< 10 for HTTP/1.0, 11 for HTTP/1.1
  FieldList fields;
  Framing framing = Framing::kNone;
  std::uint64_t content_length = 0;  ///< with Framing::kContentLength
  /// The Transfer-Encoding fields, all read as one list and written as sluice forwards them
  /// (`chunked`, `gzip, chunked`: TransferCodings::text()); empty when there were none. The
  /// client's or upstream's own lines are never forwarded (docs/http-conformance.md).
  std::string_view transfer_codings;
  /// What the Connection field and the version say (RFC 9112 §9.3): persistent or not.
  bool keep_alive = true;

  /// The raw bytes of field `f` (its whole line, CRLF included).
  [[nodiscard]] std::string_view raw_line(const FieldRef& f) const noexcept {
    return {base + f.line_begin, f.line_end - f.line_begin};
  }
};

/// A parsed request head (request-line and fields).
struct RequestHead : HeadCommon {
  boost::beast::http::verb verb = boost::beast::http::verb::unknown;
  std::string_view method;  ///< as sent (also for methods Beast does not know)
  std::string_view target;  ///< the request-target as sent
};

/// A parsed response head (status-line and fields).
struct ResponseHead : HeadCommon {
  unsigned status = 0;
  std::string_view reason;
};

}  // namespace sluice::http1
