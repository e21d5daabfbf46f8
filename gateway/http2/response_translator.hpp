// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The HTTP/1.1 response the data path writes for one stream, turned into what HTTP/2 sends
// (docs/http2.md, "One stream, one HTTP/1.1 request"). Pure: no I/O, no nghttp2.
namespace sluice::http2 {

/// Header fields as plain pairs (tests, diagnostics).
using FieldVector = std::vector<std::pair<std::string, std::string>>;

/// Header fields as HTTP/2 sends them (names lowercase), in one buffer that keeps its capacity
/// when cleared: once a connection is warm, a stream's fields cost no allocation. Fields can be
/// marked dropped (they stay in the buffer, skipped by readers).
class FieldBlock {
 public:
  void clear() noexcept {
    bytes_.clear();
    spans_.clear();
  }
  /// Appends a field; `name` is lowercased.
  void add(std::string_view name, std::string_view value);
  /// Marks the fields HTTP/2 forbids (RFC 9113 §8.2.2: Connection and what it names,
  /// Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, TE) as dropped.
  void drop_connection_specific();

  [[nodiscard]] std::size_t size() const noexcept { return spans_.size(); }
  [[nodiscard]] bool dropped(std::size_t i) const noexcept { return spans_[i].dropped; }
  [[nodiscard]] std::string_view name(std::size_t i) const noexcept {
    return {bytes_.data() + spans_[i].name_at, spans_[i].name_size};
  }
  [[nodiscard]] std::string_view value(std::size_t i) const noexcept {
    return {bytes_.data() + spans_[i].name_at + spans_[i].name_size, spans_[i].value_size};
  }
  /// Whether no field is kept.
  [[nodiscard]] bool empty() const noexcept;
  /// The kept fields as pairs.
  [[nodiscard]] FieldVector to_vector() const;

 private:
  struct Span {
    std::uint32_t name_at;
    std::uint32_t name_size;
    std::uint32_t value_size;
    bool dropped;
  };
  std::string bytes_;
  std::vector<Span> spans_;
};

/// What a translator reports, in order: zero or more informational heads (1xx), the final head,
/// body bytes, then the end (the trailers of a chunked body are in trailers()). The fields stay
/// valid until the next head or reset().
class ResponseListener {
 public:
  virtual void on_head(int status, const FieldBlock& fields, bool final) = 0;
  virtual void on_body(std::string_view bytes) = 0;
  virtual void on_end(const FieldBlock& trailers) = 0;

 protected:
  ~ResponseListener() = default;
};

/// Parses an HTTP/1.1 response (Beast's parser) fed in pieces of any size, and reports it as
/// HTTP/2 wants it: connection-specific fields dropped, names lowercased, the chunked framing
/// removed with its trailer fields kept, a body delimited by the close ended by finish(). Keeps
/// only a partial head or chunk line between calls. One translator serves response after
/// response (reset()), reusing its buffers. Not thread-safe.
class ResponseTranslator {
 public:
  explicit ResponseTranslator(ResponseListener& listener) : listener_(listener) {}
  ResponseTranslator(const ResponseTranslator&) = delete;
  ResponseTranslator& operator=(const ResponseTranslator&) = delete;

  /// Starts a response. `head_request`: the response to a HEAD has no body whatever its
  /// fields say.
  void reset(bool head_request);
  /// Parses `bytes`; every byte is taken (kept when incomplete). Returns false on a malformed
  /// response (nothing more is reported).
  bool feed(std::string_view bytes);
  /// The writer is done: a body delimited by the close ends here. Returns whether the response
  /// was complete (on_end() reported).
  bool finish();

  /// Whether the final head may come as fields (take_head()) rather than bytes: no byte of this
  /// response (nor a partial informational head) has been fed yet.
  [[nodiscard]] bool can_take_head() const noexcept;
  /// The block to fill with the head's fields before take_head() (emptied here; names are
  /// lowercased by FieldBlock::add()).
  [[nodiscard]] FieldBlock& head_fields() noexcept {
    fields_.clear();
    return fields_;
  }
  /// The final head as `status` and head_fields(), with a body of exactly `body_length` bytes
  /// (none for a response to HEAD) that feed() then takes as they are: what parsing the same
  /// head as HTTP/1.1 bytes would report, without the parse (docs/http2.md, "One stream, one
  /// HTTP/1.1 request"). Only when can_take_head().
  void take_head(int status, std::uint64_t body_length);
  [[nodiscard]] bool started() const noexcept { return parser_.has_value(); }
  [[nodiscard]] bool done() const noexcept { return done_; }
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  [[nodiscard]] const FieldBlock& fields() const noexcept { return fields_; }
  [[nodiscard]] const FieldBlock& trailers() const noexcept { return trailers_; }

 private:
  /// Beast's parser, reporting to the translator as it goes.
  class Parser final : public boost::beast::http::basic_parser<false> {
   public:
    Parser(ResponseTranslator& owner, bool head_request);
    [[nodiscard]] bool informational() const noexcept { return status_ >= 100 && status_ < 200; }

   private:
    void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                         boost::beast::string_view target, int version,
                         boost::beast::error_code& ec) override;
    void on_response_impl(int code, boost::beast::string_view reason, int version,
                          boost::beast::error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                       boost::beast::string_view value, boost::beast::error_code& ec) override;
    void on_header_impl(boost::beast::error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                           boost::beast::error_code& ec) override;
    std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                              boost::beast::error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                   boost::beast::error_code& ec) override;
    void on_finish_impl(boost::beast::error_code& ec) override;

    ResponseTranslator& owner_;
    int status_ = 0;
  };

  bool parse(std::string_view& data);
  /// After take_head(): the body bytes as they are, then the end.
  void take_body(std::string_view bytes);

  ResponseListener& listener_;
  bool head_request_ = false;
  bool fields_given_ = false;    ///< the head came through take_head(): no parser
  std::uint64_t body_left_ = 0;  ///< with fields_given_: body bytes still to come
  bool done_ = false;
  bool failed_ = false;
  std::string pending_;  ///< bytes the parser could not take yet (a partial line)
  std::optional<Parser> parser_;
  FieldBlock fields_;
  FieldBlock trailers_;
};

}  // namespace sluice::http2
