// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <boost/beast/http/basic_parser.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "gateway/http1/message_head.hpp"
#include "gateway/http1/transfer_codings.hpp"

namespace sluice::http1 {

/// Beast's HTTP/1 parser, recording where things are instead of copying them: the head's
/// request- or status-line and fields become views into the caller's buffer (a FieldList, no
/// heap), and body bytes come out as views too, so the data path forwards the original bytes
/// without building a message (docs/architecture.md, "Heads are forwarded as bytes").
///
/// Use: once the buffer holds a whole head (find_head_end()), put() it in one call; the head
/// is then complete in `head()`. For the body, call put() again on what follows: each call
/// yields at most one piece (a body slice or a chunk's data) in `piece()`, a view into the
/// buffer that stays valid until the caller consumes or refills it. Trailer fields of a chunked
/// body are parsed; a response's forwardable ones are kept as views (trailers()), a request's
/// dropped. A folded field value (obs-fold, found on the raw bytes whatever its first line
/// holds) in a request is an error (RFC 9112 §5.2 lets a server reject it); in a response it is
/// unfolded and its line written anew. Framing is judged as RFC 9112 §6 asks
/// (docs/http-conformance.md, "Framing"): a Content-Length list of equal values is one length,
/// unequal values are an error, and Transfer-Encoding (every line read strictly as one list,
/// TransferCodings) is an error when it does not parse, beside Content-Length, in an HTTP/1.0
/// message, with `chunked` twice or not last, or (in a request) without chunked as its final
/// coding; a response whose codings lack chunked is delimited by the server closing. One parser
/// per message. Not thread-safe.
template <bool IsRequest>
class MessageParser final : public boost::beast::http::basic_parser<IsRequest> {
 public:
  using Head = std::conditional_t<IsRequest, RequestHead, ResponseHead>;
  using error_code = boost::beast::error_code;

  /// User-provided on purpose: a defaulted constructor makes `std::optional::emplace()` (one
  /// parser per message, in the request's context) value-initialize, which zeroes the whole
  /// object first, 3.9 KiB of field slots that FieldList leaves unset by design
  /// (docs/architecture.md, "One request, one context"). Every member has its own initializer.
  MessageParser() noexcept {}  // NOLINT(modernize-use-equals-default): see above
  MessageParser(const MessageParser&) = delete;
  MessageParser& operator=(const MessageParser&) = delete;

  /// The parsed head (valid once is_header_done()).
  [[nodiscard]] Head& head() noexcept { return head_; }
  [[nodiscard]] const Head& head() const noexcept { return head_; }

  /// The body bytes the last put() produced (empty when it parsed framing only).
  [[nodiscard]] std::string_view piece() const noexcept { return piece_; }
  /// A response's chunked trailer fields that may be forwarded (not framing, routing or
  /// hop-by-hop fields, not folded), as views into the data of the put() that ended the
  /// message: valid as long as that data is. Empty for requests (their trailers are dropped).
  [[nodiscard]] const FieldList& trailers() const noexcept { return trailers_; }
  /// A response's `grpc-status` trailer field (a gRPC call's outcome, docs/grpc.md), or -1.
  [[nodiscard]] int grpc_status() const noexcept { return grpc_status_; }

  /// Parses from `data`, which must start where the previous call stopped. Returns the bytes
  /// consumed. For the head, `data` must hold all of it (need_more otherwise: nothing recorded).
  std::size_t put(std::string_view data, error_code& ec);

  /// The peer closed: completes an EOF-delimited body (or reports partial_message).
  void put_eof(error_code& ec) { boost::beast::http::basic_parser<IsRequest>::put_eof(ec); }

 private:
  void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                       boost::beast::string_view target, int version, error_code& ec) override;
  void on_response_impl(int code, boost::beast::string_view reason, int version,
                        error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, error_code& ec) override;
  void on_header_impl(error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code& ec) override;
  std::size_t on_body_impl(boost::beast::string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                            error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                 error_code& ec) override;
  void on_finish_impl(error_code& ec) override;

  /// Reads every Transfer-Encoding line strictly and judges the framing they give; false when
  /// the message must be refused.
  [[nodiscard]] bool judge_transfer_codings();

  [[nodiscard]] bool in_head(std::string_view s) const noexcept {
    return s.data() >= put_begin_ && s.data() + s.size() <= put_end_;
  }

  Head head_;
  std::string_view piece_;
  FieldList trailers_;
  int grpc_status_ = -1;
  const char* data_begin_ = nullptr;  ///< the data of the current put()
  const char* data_end_ = nullptr;
  const char* put_begin_ = nullptr;
  const char* put_end_ = nullptr;
  std::string folded_;  ///< unfolded response field values (rare: obs-fold)
  TransferCodings codings_;
};

/// The value of a `grpc-status` field (0 to 99), or `otherwise` when `f` is another field or
/// its value is not a status (docs/grpc.md).
[[nodiscard]] int grpc_status_field(const FieldRef& f, int otherwise) noexcept;

extern template class MessageParser<true>;
extern template class MessageParser<false>;

using RequestParser = MessageParser<true>;
using ResponseParser = MessageParser<false>;

/// Where the head in `data` ends (one past its final empty line), or 0 while it is incomplete.
/// `scanned` is how far an earlier call already looked (it is updated), so a head arriving in
/// many small reads is scanned once. An LF-only empty line also ends the head: the parser then
/// answers with its own error instead of the gateway waiting for more bytes.
[[nodiscard]] std::size_t find_head_end(std::string_view data, std::size_t& scanned) noexcept;

}  // namespace sluice::http1
