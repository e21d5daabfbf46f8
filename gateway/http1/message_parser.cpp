// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/message_parser.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <cstring>

#include "gateway/http1/head_rewrite.hpp"

namespace sluice::http1 {

namespace beast = boost::beast;
namespace http = beast::http;

std::size_t find_head_end(std::string_view data, std::size_t& scanned) noexcept {
  // The end is the first LF followed by CRLF or by LF. Resume 2 bytes before where the last
  // scan stopped: the LF that starts the terminator may already have been seen.
  std::size_t from = scanned > 2 ? scanned - 2 : 0;
  while (from < data.size()) {
    const void* hit = std::memchr(data.data() + from, '\n', data.size() - from);
    if (hit == nullptr) {
      break;
    }
    const auto lf = static_cast<std::size_t>(static_cast<const char*>(hit) - data.data());
    if (lf + 1 < data.size() && data[lf + 1] == '\n') {
      scanned = data.size();
      return lf + 2;
    }
    if (lf + 2 < data.size() && data[lf + 1] == '\r' && data[lf + 2] == '\n') {
      scanned = data.size();
      return lf + 3;
    }
    if (lf + 2 >= data.size()) {
      break;  // the terminator may still be arriving
    }
    from = lf + 1;
  }
  scanned = data.size();
  return 0;
}

namespace {

/// Whether a response trailer field may go on (RFC 9110 §6.5.1: no framing, routing,
/// authentication-of-the-message or connection fields).
bool forwardable_trailer(const FieldRef& f) noexcept {
  switch (f.id) {
    case http::field::content_length:
    case http::field::transfer_encoding:
    case http::field::content_encoding:
    case http::field::content_type:
    case http::field::content_range:
    case http::field::host:
    case http::field::set_cookie:
    case http::field::cache_control:
    case http::field::expect:
    case http::field::max_forwards:
    case http::field::pragma:
    case http::field::range:
    case http::field::te:
    case http::field::authorization:
    case http::field::www_authenticate:
    case http::field::proxy_authenticate:
    case http::field::age:
    case http::field::expires:
    case http::field::date:
    case http::field::location:
    case http::field::retry_after:
    case http::field::vary:
    case http::field::warning:
      return false;
    default:
      return !hop_by_hop_by_name(f);
  }
}

}  // namespace

/// The value of a `grpc-status` field (0 to 99), or `otherwise`.
int grpc_status_field(const FieldRef& f, int otherwise) noexcept {
  if (f.name.size() != 11 || !boost::beast::iequals(f.name, "grpc-status") || f.value.empty() ||
      f.value.size() > 2) {
    return otherwise;
  }
  int code = 0;
  for (const char c : f.value) {
    if (c < '0' || c > '9') {
      return otherwise;
    }
    code = code * 10 + (c - '0');
  }
  return code;
}

template <bool IsRequest>
std::size_t MessageParser<IsRequest>::put(std::string_view data, error_code& ec) {
  piece_ = {};
  data_begin_ = data.data();
  data_end_ = data.data() + data.size();
  const bool in_header = !this->is_header_done();
  if (in_header) {
    put_begin_ = data.data();
    put_end_ = data.data() + data.size();
    head_.base = data.data();
    head_.fields.clear();
    folded_.clear();
  }
  const std::size_t used =
      http::basic_parser<IsRequest>::put(boost::asio::const_buffer(data.data(), data.size()), ec);
  if (in_header && !ec && this->is_header_done()) {
    // The head ends with the empty line (CRLF) just consumed. A field line ends where the next
    // begins; the last one where that empty line begins.
    head_.size = used;
    FieldList& fields = head_.fields;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      fields[i].line_end =
          i + 1 < fields.size() ? fields[i + 1].line_begin : static_cast<std::uint32_t>(used - 2);
    }
  }
  return used;
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_request_impl(http::verb method,
                                               boost::beast::string_view method_str,
                                               boost::beast::string_view target, int version,
                                               error_code& ec) {
  if constexpr (IsRequest) {
    head_.verb = method;
    head_.method = method_str;
    head_.target = target;
    head_.version = static_cast<unsigned>(version);
  }
  ec = {};
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_response_impl(int code, boost::beast::string_view reason,
                                                int version, error_code& ec) {
  if constexpr (!IsRequest) {
    head_.status = static_cast<unsigned>(code);
    head_.reason = reason;
    head_.version = static_cast<unsigned>(version);
  }
  ec = {};
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_field_impl(http::field name,
                                             boost::beast::string_view name_string,
                                             boost::beast::string_view value, error_code& ec) {
  ec = {};
  if (this->is_header_done()) {  // a trailer field of a chunked body
    if constexpr (!IsRequest) {
      FieldRef f;
      f.id = name;
      f.name = name_string;
      f.value = value;
      const bool in_data = value.data() >= data_begin_ && value.data() + value.size() <= data_end_;
      if (in_data && forwardable_trailer(f)) {
        trailers_.push_back(f);
      }
      grpc_status_ = grpc_status_field(f, grpc_status_);
    }
    return;  // (a request's: dropped)
  }
  FieldRef f;
  f.id = name;
  f.name = name_string;
  f.line_begin = static_cast<std::uint32_t>(name_string.data() - head_.base);
  f.value = value;
  // obs-fold (RFC 9112 §5.2), judged on the raw bytes: Beast hands back a value unfolded into
  // its own storage, except when the first line is empty: then the value is the continuation
  // line, in place, and only the line end between the name and the value shows the fold.
  const char* name_end = name_string.data() + name_string.size();
  const bool folded =
      !in_head(value) ||
      std::memchr(name_end, '\n', static_cast<std::size_t>(value.data() - name_end)) != nullptr;
  if (folded) {
    if constexpr (IsRequest) {
      ec = http::error::bad_value;  // a request: refused
      return;
    } else {
      // A response: unfolded (each fold became a space) and the line written anew. A value
      // outside the head is copied: the views taken so far stay valid because `folded_` is
      // reserved once, large enough for every value of the head (its size bounds their total).
      if (!in_head(value)) {
        if (folded_.capacity() < static_cast<std::size_t>(put_end_ - put_begin_)) {
          folded_.reserve(static_cast<std::size_t>(put_end_ - put_begin_));
        }
        const std::size_t at = folded_.size();
        folded_.append(value);
        f.value = std::string_view(folded_).substr(at, value.size());
      }
      f.raw = false;
    }
  }
  head_.fields.push_back(f);
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_header_impl(error_code& ec) {
  ec = {};
  if (head_.fields.find(http::field::transfer_encoding) != nullptr && !judge_transfer_codings()) {
    ec = http::error::bad_transfer_encoding;
    return;
  }
  head_.keep_alive = this->keep_alive();
  if (this->is_done()) {
    head_.framing = Framing::kNone;  // no body follows (204, 304, 1xx, skip(), no length)
  } else if (this->chunked()) {
    head_.framing = Framing::kChunked;
  } else if (const auto length = this->content_length()) {
    head_.framing = *length > 0 ? Framing::kContentLength : Framing::kNone;
    head_.content_length = *length;
  } else if (this->need_eof()) {
    head_.framing = Framing::kUntilClose;
  } else {
    head_.framing = Framing::kNone;
  }
}

template <bool IsRequest>
bool MessageParser<IsRequest>::judge_transfer_codings() {
  // Beast catches Content-Length after "chunked" but not after another coding; an HTTP/1.0
  // message with Transfer-Encoding has faulty framing (RFC 9112 §6.1). Both refused.
  if (head_.fields.find(http::field::content_length) != nullptr || head_.version < 11) {
    return false;
  }
  // Every line, read strictly as one list (Beast's reader stops silently at a malformed
  // element). `chunked` at most once and only last: a request whose final coding is not
  // chunked has no determinable length (§6.3); a response with chunked before another coding
  // cannot reach the client without chunked applied twice (§6.1).
  for (std::size_t i = 0; i < head_.fields.size(); ++i) {
    const FieldRef& f = head_.fields[i];
    if (f.id == http::field::transfer_encoding && !codings_.add(f.value)) {
      return false;
    }
  }
  const bool chunked = codings_.chunked_final();
  if ((codings_.chunked_count() != 0 && !chunked) || (IsRequest && !chunked)) {
    return false;
  }
  // Beast frames the body by its own reading of the same lines: they must agree.
  if (chunked != this->chunked()) {
    return false;
  }
  head_.transfer_codings = codings_.text();
  return true;
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_body_init_impl(const boost::optional<std::uint64_t>&,
                                                 error_code& ec) {
  ec = {};
}

template <bool IsRequest>
std::size_t MessageParser<IsRequest>::on_body_impl(boost::beast::string_view body, error_code& ec) {
  ec = {};
  piece_ = body;
  return body.size();
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_chunk_header_impl(std::uint64_t, boost::beast::string_view,
                                                    error_code& ec) {
  ec = {};  // chunk boundaries are not forwarded: each piece is re-framed on the way out
}

template <bool IsRequest>
std::size_t MessageParser<IsRequest>::on_chunk_body_impl(std::uint64_t,
                                                         boost::beast::string_view body,
                                                         error_code& ec) {
  ec = {};
  piece_ = body;
  return body.size();
}

template <bool IsRequest>
void MessageParser<IsRequest>::on_finish_impl(error_code& ec) {
  ec = {};
}

template class MessageParser<true>;
template class MessageParser<false>;

}  // namespace sluice::http1
