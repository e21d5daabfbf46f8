// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/admin_path.hpp"

#include "gateway/http1/path_normalizer.hpp"

namespace sluice::admin {
namespace {

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    const int high = http1::hex_digit_value(text[i + 1]);
    const int low = http1::hex_digit_value(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

// RFC 3629: well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF). Names and
// keys end up in JSON documents, which must stay valid UTF-8 to be written at all.
bool is_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    unsigned min = 0;
    unsigned code = 0;
    if (lead < 0x80U) {
      ++i;
      continue;
    }
    if ((lead & 0xE0U) == 0xC0U) {
      length = 2, min = 0x80U, code = lead & 0x1FU;
    } else if ((lead & 0xF0U) == 0xE0U) {
      length = 3, min = 0x800U, code = lead & 0x0FU;
    } else if ((lead & 0xF8U) == 0xF0U) {
      length = 4, min = 0x10000U, code = lead & 0x07U;
    } else {
      return false;
    }
    if (i + length > text.size()) {
      return false;
    }
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0U) != 0x80U) {
        return false;
      }
      code = (code << 6U) | (next & 0x3FU);
    }
    if (code < min || code > 0x10FFFFU || (code >= 0xD800U && code <= 0xDFFFU)) {
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace

std::optional<std::vector<std::string>> path_segments(std::string_view target) {
  if (const auto query = target.find('?'); query != std::string_view::npos) {
    target = target.substr(0, query);
  }
  if (target.empty() || target.front() != '/') {
    return std::nullopt;
  }
  target.remove_prefix(1);
  std::vector<std::string> segments;
  for (;;) {
    const auto slash = target.find('/');
    auto decoded = percent_decode(target.substr(0, slash));
    if (!decoded || !is_utf8(*decoded)) {
      return std::nullopt;
    }
    segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) {
      return segments;
    }
    target.remove_prefix(slash + 1);
  }
}

std::optional<std::string> query_parameter(std::string_view target, std::string_view name) {
  const auto query = target.find('?');
  if (query == std::string_view::npos) {
    return std::nullopt;
  }
  target.remove_prefix(query + 1);
  if (const auto fragment = target.find('#'); fragment != std::string_view::npos) {
    target = target.substr(0, fragment);
  }
  while (!target.empty()) {
    const auto amp = target.find('&');
    const std::string_view pair = target.substr(0, amp);
    const auto equals = pair.find('=');
    const auto key = percent_decode(pair.substr(0, equals));
    if (key && *key == name) {
      return equals == std::string_view::npos ? std::string()
                                              : percent_decode(pair.substr(equals + 1));
    }
    if (amp == std::string_view::npos) {
      break;
    }
    target.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace sluice::admin
