// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

// An HTTP/2 request's header fields as the HTTP/1.1 head the rest of the data path reads
// (docs/http2.md, "One stream, one HTTP/1.1 request"). Pure: no I/O, no nghttp2.
namespace sluice::http2 {

/// Collects one request's decoded fields (nghttp2 has already checked them against RFC 9113:
/// pseudo-fields, lowercase names, no connection-specific fields, no CR, LF or NUL in values)
/// and writes them as an HTTP/1.1 head:
/// - `:method :path HTTP/1.1` (CONNECT: `:authority` as the target), then `Host` from
///   `:authority`, else the `host` field;
/// - `cookie` fields joined with "; " into one (RFC 9113 §8.2.3), `te` dropped (its only h2
///   value, "trailers", means nothing to an HTTP/1.1 upstream that is not asked by Connection);
/// - `Transfer-Encoding: chunked` when a body follows without a `content-length`.
/// Bounded: past `max_bytes` of fields (name, value and 4 bytes each, as the HTTP/1.1 line would
/// take) the rest is dropped and oversized() is set, so the request is answered 431 as an
/// HTTP/1.1 head over `http.max_header_bytes` would be. Not thread-safe.
class RequestHead {
 public:
  explicit RequestHead(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  /// Forgets the fields (keeping the buffers) for the next request, bounded by `max_bytes`.
  void clear(std::size_t max_bytes) noexcept;

  /// One decoded field, pseudo-fields included.
  void add(std::string_view name, std::string_view value);

  [[nodiscard]] bool oversized() const noexcept { return oversized_; }
  /// Whether the pseudo-fields make a request sluice may forward (RFC 9113 §8.3.1; nghttp2
  /// checks the `:path` form only when `:scheme` is http or https): `:scheme` is `http` or
  /// `https`, and `:path` is origin-form, or `*` for OPTIONS. A CONNECT has neither (nghttp2
  /// checks that). False: the stream is reset with PROTOCOL_ERROR, never routed, because the
  /// head this class writes would carry an absolute-form target that routes by its own
  /// authority instead of `:authority` (docs/http2.md).
  [[nodiscard]] bool well_formed() const noexcept;
  [[nodiscard]] bool has_content_length() const noexcept { return content_length_; }
  [[nodiscard]] std::string_view method() const noexcept { return method_; }

  /// The HTTP/1.1 head, ending with its empty line. `chunked`: a body without a length follows.
  [[nodiscard]] std::string build(bool chunked) const;
  /// The same, into `head` (replacing what it held, reusing its buffer).
  /// ... with `content-length: length` when given (and not chunked): a body that had
  /// arrived whole before the request was served (Stream::settle_request_framing()).
  void build_into(std::string& head, bool chunked,
                  std::optional<std::size_t> length = std::nullopt) const;

 private:
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  bool oversized_ = false;
  bool content_length_ = false;
  std::string method_;
  std::string scheme_;
  std::string path_;
  std::string authority_;
  std::string host_;
  std::string cookie_;
  std::string fields_;  ///< "name: value\r\n" lines
};

}  // namespace sluice::http2
