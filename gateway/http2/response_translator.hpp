// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The HTTP/1.1 response the data path writes for one stream, turned into what HTTP/2 sends
// (docs/http2.md, "One stream, one HTTP/1.1 request"). Pure: no I/O, no nghttp2.
namespace sluice::http2 {

/// Header fields as HTTP/2 sends them: lowercase names.
using FieldVector = std::vector<std::pair<std::string, std::string>>;

/// What a translator reports, in order: zero or more informational heads (1xx), the final head,
/// body bytes, then the end with the trailers of a chunked body (possibly none).
class ResponseListener {
 public:
  virtual void on_head(int status, FieldVector fields, bool final) = 0;
  virtual void on_body(std::string_view bytes) = 0;
  virtual void on_end(FieldVector trailers) = 0;

 protected:
  ~ResponseListener() = default;
};

/// Parses an HTTP/1.1 response (Beast's parser) fed in pieces of any size, and reports it as
/// HTTP/2 wants it: connection-specific fields dropped (Connection and what it names,
/// Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade), names lowercased, the chunked
/// framing removed with its trailer fields kept, a body delimited by the close ended by
/// finish(). Keeps only a partial head or chunk line between calls. Not thread-safe.
class ResponseTranslator {
 public:
  /// `head_request`: the response to a HEAD has no body whatever its fields say.
  ResponseTranslator(ResponseListener& listener, bool head_request);
  ~ResponseTranslator();
  ResponseTranslator(const ResponseTranslator&) = delete;
  ResponseTranslator& operator=(const ResponseTranslator&) = delete;

  /// Parses `bytes`; every byte is taken (kept when incomplete). Returns false on a malformed
  /// response (nothing more is reported).
  bool feed(std::string_view bytes);
  /// The writer is done: a body delimited by the close ends here. Returns whether the response
  /// was complete (on_end() reported).
  bool finish();
  [[nodiscard]] bool done() const noexcept { return done_; }
  [[nodiscard]] bool failed() const noexcept { return failed_; }

 private:
  class Parser;
  bool parse(std::string_view& data);

  ResponseListener& listener_;
  bool head_request_;
  bool done_ = false;
  bool failed_ = false;
  std::string pending_;  ///< bytes the parser could not take yet (a partial line)
  std::unique_ptr<Parser> current_;
};

}  // namespace sluice::http2
