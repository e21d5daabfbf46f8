// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/request_target.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>

namespace sluice::http1 {
namespace {

bool is_alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
/// RFC 3986 §2.3 unreserved.
bool is_unreserved(char c) noexcept {
  return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}
/// RFC 3986 §2.2 sub-delims.
bool is_sub_delim(char c) noexcept {
  return std::string_view("!$&'()*+,;=").find(c) != std::string_view::npos;
}

/// Characters of a reg-name (unreserved and sub-delims; percent-encoding is refused, see
/// valid_host()), one table lookup per byte: the Host of every request is checked.
constexpr std::array<bool, 256> kRegNameChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    table[static_cast<std::size_t>(c)] =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        std::string_view("-._~!$&'()*+,;=").find(ch) != std::string_view::npos;
  }
  return table;
}();

bool reg_name_char(char c) noexcept {
  return kRegNameChars[static_cast<unsigned char>(c)];
}

bool all_of(std::string_view s, bool (*pred)(char) noexcept) noexcept {
  return std::all_of(s.begin(), s.end(), [pred](char c) { return pred(c); });
}

/// IPv6address (RFC 3986 §3.2.2, the text forms of RFC 4291 §2.2): inet_pton accepts exactly
/// those, without a zone.
bool valid_ipv6(std::string_view s) noexcept {
  std::array<char, 64> text{};
  if (s.empty() || s.size() >= text.size()) {
    return false;
  }
  std::copy(s.begin(), s.end(), text.begin());
  std::array<unsigned char, 16> bytes{};
  return ::inet_pton(AF_INET6, text.data(), bytes.data()) == 1;
}

/// IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
bool valid_ipvfuture(std::string_view s) noexcept {
  if (s.size() < 4 || (s[0] != 'v' && s[0] != 'V')) {
    return false;
  }
  const auto dot = s.find('.', 1);
  if (dot == std::string_view::npos || dot == 1 || dot + 1 == s.size()) {
    return false;
  }
  return all_of(s.substr(1, dot - 1), is_hex) && all_of(s.substr(dot + 1), [](char c) noexcept {
           return is_unreserved(c) || is_sub_delim(c) || c == ':';
         });
}

}  // namespace

bool valid_host(std::string_view value) noexcept {
  std::string_view host = value;
  std::string_view rest;
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    const std::string_view literal = host.substr(1, close - 1);
    if (!valid_ipv6(literal) && !valid_ipvfuture(literal)) {
      return false;
    }
    rest = host.substr(close + 1);
  } else {
    std::size_t end = 0;  // the reg-name runs up to the first byte that is not one of its own
    while (end < host.size() && reg_name_char(host[end])) {
      ++end;
    }
    rest = host.substr(end);
  }
  if (rest.empty()) {
    return true;
  }
  if (rest.front() != ':') {
    return false;
  }
  for (const char c : rest.substr(1)) {
    if (!is_digit(c)) {
      return false;
    }
  }
  return true;
}

std::optional<RequestTarget> parse_request_target(std::string_view target) noexcept {
  if (target.empty() || target.find('#') != std::string_view::npos) {
    return std::nullopt;
  }
  RequestTarget out;
  if (target == "*") {
    out.form = TargetForm::kAsterisk;
    return out;
  }
  std::string_view rest = target;
  if (target.front() != '/') {
    // absolute-form: only the http and https schemes, with an authority
    std::string_view scheme;
    if (const auto colon = target.find(':'); colon != std::string_view::npos) {
      scheme = target.substr(0, colon);
    }
    if (!boost::beast::iequals(scheme, "http") && !boost::beast::iequals(scheme, "https")) {
      return std::nullopt;
    }
    rest = target.substr(scheme.size() + 1);
    if (!rest.starts_with("//")) {
      return std::nullopt;
    }
    rest.remove_prefix(2);
    const auto end = std::min(rest.find_first_of("/?"), rest.size());
    out.form = TargetForm::kAbsolute;
    out.authority = rest.substr(0, end);
    rest.remove_prefix(end);
    // No userinfo (RFC 9110 §4.2.4), a non-empty host (§4.2.1), and the Host grammar.
    if (out.authority.empty() || out.authority.front() == ':' ||
        out.authority.find('@') != std::string_view::npos || !valid_host(out.authority)) {
      return std::nullopt;
    }
  }
  const auto query = rest.find('?');
  out.path = rest.substr(0, query);
  out.query = query == std::string_view::npos ? std::string_view{} : rest.substr(query);
  return out;
}

}  // namespace sluice::http1
