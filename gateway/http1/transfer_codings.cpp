// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/transfer_codings.hpp"

#include <boost/beast/core/string.hpp>

namespace sluice::http1 {
namespace {

constexpr std::string_view kChunked = "chunked";

/// tchar (RFC 9110 §5.6.2).
bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

/// qdtext and the second byte of a quoted-pair (RFC 9110 §5.6.4), obs-text included.
bool is_quoted_text(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

/// A cursor over one field value: each read either consumes what it names or nothing.
class Reader {
 public:
  explicit Reader(std::string_view s) noexcept : s_(s) {}

  [[nodiscard]] bool at_end() const noexcept { return i_ == s_.size(); }
  [[nodiscard]] bool peek(char c) const noexcept { return i_ < s_.size() && s_[i_] == c; }
  void skip() noexcept { ++i_; }
  void skip_ows() noexcept {
    while (peek(' ') || peek('\t')) {
      ++i_;
    }
  }
  /// A token, or empty when none starts here.
  std::string_view token() noexcept {
    const std::size_t begin = i_;
    while (i_ < s_.size() && is_tchar(s_[i_])) {
      ++i_;
    }
    return s_.substr(begin, i_ - begin);
  }
  /// A quoted-string, quotes included, or empty when none (or a broken one) starts here.
  std::string_view quoted_string() noexcept {
    const std::size_t begin = i_;
    if (!peek('"')) {
      return {};
    }
    for (std::size_t j = i_ + 1; j < s_.size(); ++j) {
      if (s_[j] == '"') {
        i_ = j + 1;
        return s_.substr(begin, i_ - begin);
      }
      if (s_[j] == '\\') {
        ++j;  // a quoted-pair: the next byte is taken as it is
      }
      if (j >= s_.size() || !is_quoted_text(s_[j])) {
        return {};
      }
    }
    return {};  // no closing quote
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

void append_lower(std::string& out, std::string_view s) {
  for (const char c : s) {
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
}

}  // namespace

bool TransferCodings::add(std::string_view value) {
  Reader in(value);
  bool any = false;
  for (;;) {
    in.skip_ows();
    if (in.at_end()) {
      return any;
    }
    if (in.peek(',')) {  // an empty element
      in.skip();
      continue;
    }
    const std::string_view name = in.token();
    if (name.empty()) {
      return false;
    }
    const bool chunked = boost::beast::iequals(name, kChunked);
    if (!text_.empty()) {
      text_.append(", ");
    }
    append_lower(text_, name);
    for (in.skip_ows(); in.peek(';'); in.skip_ows()) {
      in.skip();
      in.skip_ows();
      const std::string_view param = in.token();
      in.skip_ows();
      if (chunked || param.empty() || !in.peek('=')) {
        return false;
      }
      in.skip();
      in.skip_ows();
      std::string_view param_value = in.token();
      if (param_value.empty()) {
        param_value = in.quoted_string();
      }
      if (param_value.empty()) {
        return false;
      }
      text_.push_back(';');
      append_lower(text_, param);
      text_.push_back('=');
      text_.append(param_value);
    }
    if (!in.at_end() && !in.peek(',')) {
      return false;  // two codings without a comma, or a byte outside the grammar
    }
    chunked_count_ += chunked ? 1 : 0;
    last_is_chunked_ = chunked;
    any = true;
  }
}

std::string_view without_final_chunked(std::string_view codings) noexcept {
  if (codings == kChunked) {
    return {};
  }
  if (codings.ends_with(", chunked")) {
    codings.remove_suffix(kChunked.size() + 2);
  }
  return codings;
}

}  // namespace sluice::http1
