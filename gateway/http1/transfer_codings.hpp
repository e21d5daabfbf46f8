// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::http1 {

/// The transfer codings of one message: every Transfer-Encoding field value, in order, read
/// strictly as one list (RFC 9110 §5.6.1 lists of RFC 9112 §7 `transfer-coding`s:
/// `token *( OWS ";" OWS token BWS "=" BWS ( token / quoted-string ) )`), and the one field
/// value sluice writes in their place (docs/http-conformance.md, "Transfer-Encoding").
///
/// Strict where Beast's token-list reader is lenient: Beast stops silently at the first element
/// that does not parse, so `chunked identity` looks like a list ending in `chunked`. Here any
/// byte outside the grammar fails the whole list, a field without a coding fails, and `chunked`
/// takes no parameters (RFC 9112 §7.1 defines none; a recipient cannot know what one means).
/// Empty list elements are skipped, as RFC 9110 §5.6.1 asks of a recipient.
///
/// The text written back has coding and parameter names in lower case, `", "` between codings
/// and `;name=value` parameters (values as received: a validated token or quoted-string).
/// Not thread-safe; one per message.
class TransferCodings {
 public:
  /// Reads one Transfer-Encoding field value (without surrounding whitespace). False when it
  /// does not parse or names no coding; the list is then unusable.
  [[nodiscard]] bool add(std::string_view value);

  /// The codings as sluice forwards them, e.g. `chunked` or `gzip, chunked`.
  [[nodiscard]] std::string_view text() const noexcept { return text_; }
  /// How many times `chunked` was listed.
  [[nodiscard]] std::size_t chunked_count() const noexcept { return chunked_count_; }
  /// Whether the final coding is `chunked` and it is listed once: the only list whose body a
  /// recipient delimits by chunks (RFC 9112 §6.3).
  [[nodiscard]] bool chunked_final() const noexcept {
    return chunked_count_ == 1 && last_is_chunked_;
  }
  void clear() noexcept {
    text_.clear();
    chunked_count_ = 0;
    last_is_chunked_ = false;
  }

 private:
  std::string text_;
  std::size_t chunked_count_ = 0;
  bool last_is_chunked_ = false;
};

/// `codings` (a TransferCodings::text()) without its final `chunked` (empty when that was the
/// only coding): what remains once the chunked framing is taken off.
[[nodiscard]] std::string_view without_final_chunked(std::string_view codings) noexcept;

}  // namespace sluice::http1
