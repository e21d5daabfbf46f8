// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/endpoint.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <system_error>

namespace sluice::config {
namespace {

namespace ip = boost::asio::ip;

constexpr std::string_view kNotHostPort = "must be host:port (e.g. 127.0.0.1:9001)";
constexpr std::string_view kNotCidr = "not an IP address or CIDR";
constexpr std::size_t kMaxHostNameLength = 253;
constexpr std::size_t kMaxLabelLength = 63;
constexpr unsigned kBitsPerByte = 8;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

bool is_label_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '-';
}

bool is_label(std::string_view label) {
  return !label.empty() && label.size() <= kMaxLabelLength && label.front() != '-' &&
         label.back() != '-' && std::all_of(label.begin(), label.end(), is_label_char);
}

// A mask keeping the top `bits` (0..8) bits of a byte.
unsigned char high_bits_mask(unsigned bits) {
  return static_cast<unsigned char>((0xFFU << (kBitsPerByte - bits)) & 0xFFU);
}

// True if the first `bits` bits of `a` and `b` agree.
template <std::size_t N>
bool same_prefix(const std::array<unsigned char, N>& a, const std::array<unsigned char, N>& b,
                 unsigned bits) {
  const std::size_t full_bytes = bits / kBitsPerByte;
  if (!std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(full_bytes), b.begin())) {
    return false;
  }
  const unsigned rest = bits % kBitsPerByte;
  if (rest == 0) {
    return true;
  }
  const unsigned char mask = high_bits_mask(rest);
  return (a[full_bytes] & mask) == (b[full_bytes] & mask);
}

// `bytes` with every bit after the first `bits` cleared.
template <std::size_t N>
std::array<unsigned char, N> keep_prefix(std::array<unsigned char, N> bytes, unsigned bits) {
  for (std::size_t i = 0; i < N; ++i) {
    const auto start = static_cast<unsigned>(i * kBitsPerByte);
    if (start >= bits) {
      bytes[i] = 0;
    } else if (bits - start < kBitsPerByte) {
      bytes[i] &= high_bits_mask(bits - start);
    }
  }
  return bytes;
}

ip::address network_of(const ip::address& address, unsigned prefix_length) {
  if (address.is_v4()) {
    return ip::address_v4(keep_prefix(address.to_v4().to_bytes(), prefix_length));
  }
  return ip::address_v6(keep_prefix(address.to_v6().to_bytes(), prefix_length));
}

// Parses the port after "host:"; on failure returns an error message instead.
Parsed<std::uint16_t> parse_port(std::string_view text) {
  constexpr unsigned kMaxPort = 65535;
  if (text.empty()) {
    return {std::nullopt, "missing port (e.g. 127.0.0.1:9001)"};
  }
  if (!is_all_digits(text)) {
    return {std::nullopt, "port must be a number"};
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 1 || value > kMaxPort) {
    return {std::nullopt, "port must be between 1 and 65535"};
  }
  return {static_cast<std::uint16_t>(value), {}};
}

// The host part of "host:port" without brackets, canonicalised when it is an IP literal.
std::optional<std::string> parse_host(std::string_view host, bool bracketed) {
  if (bracketed) {
    const auto address = parse_ip_address(host);
    if (!address || !address->is_v6()) {
      return std::nullopt;
    }
    return address->to_string();
  }
  if (const auto address = parse_ip_address(host); address && address->is_v4()) {
    return address->to_string();
  }
  if (is_host_name(host)) {
    return std::string(host);
  }
  return std::nullopt;
}

}  // namespace

std::string to_string(const Endpoint& endpoint) {
  const bool is_v6 = endpoint.host.find(':') != std::string::npos;
  std::string text = is_v6 ? "[" + endpoint.host + "]" : endpoint.host;
  text += ':';
  text += std::to_string(endpoint.port);
  return text;
}

bool Cidr::contains(const ip::address& address) const {
  if (network.is_v4()) {
    if (address.is_v4()) {
      return same_prefix(network.to_v4().to_bytes(), address.to_v4().to_bytes(), prefix_length);
    }
    if (!address.to_v6().is_v4_mapped()) {
      return false;
    }
    const auto v4 = ip::make_address_v4(ip::v4_mapped, address.to_v6());
    return same_prefix(network.to_v4().to_bytes(), v4.to_bytes(), prefix_length);
  }
  const auto v6 =
      address.is_v6() ? address.to_v6() : ip::make_address_v6(ip::v4_mapped, address.to_v4());
  return same_prefix(network.to_v6().to_bytes(), v6.to_bytes(), prefix_length);
}

std::string to_string(const Cidr& cidr) {
  return cidr.network.to_string() + "/" + std::to_string(cidr.prefix_length);
}

Parsed<Endpoint> parse_endpoint(std::string_view text) {
  const bool bracketed = !text.empty() && text.front() == '[';
  std::size_t colon = std::string_view::npos;
  std::string_view host;
  if (bracketed) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return {std::nullopt, std::string(kNotHostPort)};
    }
    host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return {std::nullopt, std::string(kNotHostPort)};
    }
    host = text.substr(0, colon);
  }
  auto parsed_host = parse_host(host, bracketed);
  if (!parsed_host) {
    return {std::nullopt, std::string(kNotHostPort)};
  }
  auto port = parse_port(text.substr(colon + 1));
  if (!port.ok()) {
    return {std::nullopt, std::move(port.error)};
  }
  return {Endpoint{std::move(*parsed_host), *port.value}, {}};
}

Parsed<Cidr> parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  const auto address = parse_ip_address(text.substr(0, slash));
  if (!address) {
    return {std::nullopt, std::string(kNotCidr)};
  }
  const unsigned width = address->is_v4() ? 32 : 128;
  unsigned prefix_length = width;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    constexpr std::size_t kMaxPrefixDigits = 3;
    if (!is_all_digits(digits) || digits.size() > kMaxPrefixDigits) {
      return {std::nullopt, std::string(kNotCidr)};
    }
    std::from_chars(digits.data(), digits.data() + digits.size(), prefix_length);
    if (prefix_length > width) {
      return {std::nullopt, std::string(kNotCidr)};
    }
  }
  const auto network = network_of(*address, prefix_length);
  if (network != *address) {
    return {std::nullopt,
            "host bits set; did you mean " + to_string(Cidr{network, prefix_length}) + "?"};
  }
  return {Cidr{network, prefix_length}, {}};
}

std::optional<ip::address> parse_ip_address(std::string_view text) {
  // Only the characters of a plain literal: no zone ids ("%eth0"), no NULs that would end the
  // C string early inside inet_pton.
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' || c == ':';
  });
  if (!plain) {
    return std::nullopt;
  }
  // One parser, chosen by the text: make_address() tries IPv6 first, so every IPv4 literal
  // (an X-Forwarded-For entry on nearly every request behind a proxy) was parsed twice.
  boost::system::error_code ec;
  const std::string c_text(text);
  const ip::address address = text.find(':') == std::string_view::npos
                                  ? ip::address(ip::make_address_v4(c_text.c_str(), ec))
                                  : ip::address(ip::make_address_v6(c_text.c_str(), ec));
  if (ec) {
    return std::nullopt;
  }
  return address;
}

bool is_host_name(std::string_view text) {
  if (text.empty() || text.size() > kMaxHostNameLength) {
    return false;
  }
  std::string_view last_label;
  std::size_t start = 0;
  for (;;) {
    const auto dot = text.find('.', start);
    last_label = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!is_label(last_label)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  return !is_all_digits(last_label);
}

}  // namespace sluice::config
