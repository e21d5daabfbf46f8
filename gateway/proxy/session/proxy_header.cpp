// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/session/proxy_header.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <initializer_list>

namespace sluice::proxy {
namespace {

namespace ip = boost::asio::ip;
using Status = ProxyHeaderStatus;
using Endpoint = ip::tcp::endpoint;

constexpr std::string_view kV1Signature = "PROXY ";
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};
/// The v1 line before its "\r\n": the CR sits at index 105 at the latest.
constexpr std::size_t kMaxV1Body = kMaxProxyV1Bytes - 2;
/// v2: signature, version/command, family/transport, 16-bit length.
constexpr std::size_t kV2FixedBytes = 16;
/// The smallest v2 address block of each family (UNSPEC, INET, INET6, UNIX).
constexpr std::array<std::size_t, 4> kV2MinAddressBytes = {0, 12, 36, 216};
constexpr unsigned kV2Unspec = 0;
constexpr unsigned kV2Inet = 1;
constexpr unsigned kV2Inet6 = 2;
constexpr unsigned kV2Dgram = 2;
/// Longest address text inet_pton accepts (INET6_ADDRSTRLEN without the NUL).
constexpr std::size_t kMaxAddressText = 45;

enum class Family { kV4, kV6 };

/// tcp::endpoint's constructor is not noexcept: it calls address::to_v6(), which throws for a
/// v4 address, but only after is_v4() has sent v4 addresses the other way. clang-tidy cannot
/// see that, here and in the callers it looks through.
// NOLINTNEXTLINE(bugprone-exception-escape)
Endpoint make_endpoint(const ip::address& address, std::uint16_t port) noexcept {
  return {address, port};
}

ProxyHeaderParse incomplete() noexcept {
  return {Status::kIncomplete, ProxyHeader{}};
}
ProxyHeaderParse invalid() noexcept {
  return {Status::kInvalid, ProxyHeader{}};
}

unsigned octet(char c) noexcept {
  return static_cast<unsigned char>(c);
}

/// Whether `bytes` and `literal` agree over their common length.
bool agrees(std::string_view bytes, std::string_view literal) noexcept {
  const auto n = std::min(bytes.size(), literal.size());
  return bytes.substr(0, n) == literal.substr(0, n);
}

/// `text` as an address of `family` in its textual form (dotted quad; IPv6 text, with or
/// without a dotted tail, no scope id). make_address_v4/v6 take a NUL-terminated string
/// without allocating (their string_view overloads copy into a std::string), so the bounded
/// text is copied onto the stack.
std::optional<ip::address> parse_address(std::string_view text, Family family) noexcept {
  const std::string_view allowed =
      family == Family::kV4 ? "0123456789." : "0123456789abcdefABCDEF:.";
  if (text.empty() || text.size() > kMaxAddressText ||
      text.find_first_not_of(allowed) != std::string_view::npos) {
    return std::nullopt;
  }
  std::array<char, kMaxAddressText + 1> c_text{};
  std::copy(text.begin(), text.end(), c_text.begin());
  boost::system::error_code ec;
  if (family == Family::kV4) {
    const auto v4 = ip::make_address_v4(c_text.data(), ec);
    return ec ? std::nullopt : std::optional<ip::address>(v4);
  }
  const auto v6 = ip::make_address_v6(c_text.data(), ec);
  return ec ? std::nullopt : std::optional<ip::address>(v6);
}

/// Whether some completion of `text` is an address of `family`. Trying a few completions is
/// enough: a dotted tail (the whole of a v4 address) is completed with zero octets, which
/// parses whenever any completion does; a v6 text without one needs at most another group,
/// a "::", or both.
bool address_prefix_ok(std::string_view text, Family family) noexcept {
  if (text.empty()) {
    return true;
  }
  if (text.size() > kMaxAddressText) {
    return false;
  }
  std::array<char, kMaxAddressText + 8> candidate{};  // text + the longest completion
  const auto completes = [&](std::initializer_list<std::string_view> parts) {
    auto* out = std::copy(text.begin(), text.end(), candidate.begin());
    for (const auto part : parts) {
      out = std::copy(part.begin(), part.end(), out);
    }
    const auto length = static_cast<std::size_t>(out - candidate.begin());
    return parse_address({candidate.data(), length}, family).has_value();
  };
  const auto colon = family == Family::kV4 ? std::string_view::npos : text.rfind(':');
  const auto tail = colon == std::string_view::npos ? text : text.substr(colon + 1);
  if (family == Family::kV4 || tail.find('.') != std::string_view::npos) {
    const auto dots = static_cast<std::size_t>(std::count(tail.begin(), tail.end(), '.'));
    if (dots > 3) {
      return false;
    }
    constexpr std::string_view kZeroOctets = ".0.0.0";
    return completes({tail.ends_with('.') ? "0" : "", kZeroOctets.substr(2 * dots)});
  }
  return completes({}) || completes({"::"}) || completes({":"}) || completes({"0"}) ||
         completes({"0::"});
}

/// A decimal port, 0..65535, without sign or leading zeros.
std::optional<std::uint16_t> parse_port(std::string_view text) noexcept {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  unsigned value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value > 65535 ? std::nullopt : std::optional<std::uint16_t>(value);
}

/// Field `index` of "SRC DST SPORT DPORT". An `open` field is the last one of a line that has
/// not ended yet: it need only be able to grow into a valid one (a port prefix is itself a port).
bool v1_field_ok(std::string_view field, std::size_t index, Family family, bool open) noexcept {
  if (index < 2) {
    return open ? address_prefix_ok(field, family) : parse_address(field, family).has_value();
  }
  return (open && field.empty()) || parse_port(field).has_value();
}

/// What the text after "PROXY " amounts to, and the client it names. A plain value.
struct V1Body {
  Status status = Status::kInvalid;
  std::optional<Endpoint> source;
};

/// "SRC DST SPORT DPORT" after "PROXY TCP4 " or "PROXY TCP6 ", single spaces. `line_ended`:
/// the "\r" followed them, so they are all there.
V1Body parse_v1_addresses(std::string_view text, Family family, bool line_ended) noexcept {
  std::array<std::string_view, 4> fields{};
  std::size_t count = 0;
  for (;;) {
    if (count == fields.size()) {
      return {};  // a fifth field, or a space after the port
    }
    const auto space = text.find(' ');
    fields[count++] = text.substr(0, space);
    if (space == std::string_view::npos) {
      break;
    }
    text.remove_prefix(space + 1);
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!v1_field_ok(fields[i], i, family, !line_ended && i + 1 == count)) {
      return {};
    }
  }
  if (!line_ended) {
    return {Status::kIncomplete, std::nullopt};
  }
  if (count != fields.size()) {
    return {};
  }
  return {Status::kComplete,
          make_endpoint(*parse_address(fields[0], family), *parse_port(fields[2]))};
}

/// What follows "PROXY ": the protocol, then for TCP4/TCP6 the addresses; after UNKNOWN
/// anything up to the "\r\n" is ignored.
V1Body parse_v1_body(std::string_view body, bool line_ended) noexcept {
  constexpr std::string_view kUnknown = "UNKNOWN";
  constexpr std::string_view kTcp4 = "TCP4 ";
  constexpr std::string_view kTcp6 = "TCP6 ";
  if (body.starts_with(kUnknown)) {
    return {line_ended ? Status::kComplete : Status::kIncomplete, std::nullopt};
  }
  if (body.starts_with(kTcp4)) {
    return parse_v1_addresses(body.substr(kTcp4.size()), Family::kV4, line_ended);
  }
  if (body.starts_with(kTcp6)) {
    return parse_v1_addresses(body.substr(kTcp6.size()), Family::kV6, line_ended);
  }
  const bool can_grow = !line_ended && (kUnknown.starts_with(body) || kTcp4.starts_with(body) ||
                                        kTcp6.starts_with(body));
  return {can_grow ? Status::kIncomplete : Status::kInvalid, std::nullopt};
}

/// v1: one line of at most 107 bytes ending in "\r\n"; no other CR or LF in it.
ProxyHeaderParse parse_v1(std::string_view bytes) noexcept {
  if (!agrees(bytes, kV1Signature)) {
    return invalid();
  }
  if (bytes.size() < kV1Signature.size()) {
    return incomplete();
  }
  const auto end = bytes.substr(0, kMaxV1Body + 1).find_first_of("\r\n");
  if (end == std::string_view::npos) {
    // No CR up to index 105: one coming later would make the line longer than 107 bytes.
    const bool can_grow =
        bytes.size() <= kMaxV1Body &&
        parse_v1_body(bytes.substr(kV1Signature.size()), false).status == Status::kIncomplete;
    return can_grow ? incomplete() : invalid();
  }
  if (bytes[end] == '\n') {
    return invalid();  // LF without its CR
  }
  const auto body =
      parse_v1_body(bytes.substr(kV1Signature.size(), end - kV1Signature.size()), true);
  if (body.status == Status::kInvalid) {
    return invalid();
  }
  if (end + 1 == bytes.size()) {
    return incomplete();
  }
  if (bytes[end + 1] != '\n') {
    return invalid();  // CR without its LF
  }
  return {Status::kComplete, ProxyHeader{end + 2, body.source, 1}};
}

/// The client of a v2 PROXY header with an INET or INET6 address block (`block` starts after
/// the 16 fixed bytes and holds at least the family's minimum).
// NOLINTNEXTLINE(bugprone-exception-escape): make_endpoint()
Endpoint v2_source(std::string_view block, unsigned family) noexcept {
  const auto port_at = [&](std::size_t i) {
    return static_cast<std::uint16_t>((octet(block[i]) << 8U) | octet(block[i + 1]));
  };
  if (family == kV2Inet) {
    ip::address_v4::bytes_type address{};
    std::transform(block.begin(), block.begin() + 4, address.begin(), octet);
    return make_endpoint(ip::address_v4(address), port_at(8));
  }
  ip::address_v6::bytes_type address{};
  std::transform(block.begin(), block.begin() + 16, address.begin(), octet);
  return make_endpoint(ip::address_v6(address), port_at(32));
}

/// v2: the signature, version 2 with LOCAL or PROXY, family/transport, big-endian length of
/// the rest (addresses, then TLVs, which are skipped).
ProxyHeaderParse parse_v2(std::string_view bytes) noexcept {
  if (!agrees(bytes, kV2Signature)) {
    return invalid();
  }
  if (bytes.size() <= kV2Signature.size()) {
    return incomplete();
  }
  const unsigned version = octet(bytes[12]) >> 4U;
  const unsigned command = octet(bytes[12]) & 0xFU;
  if (version != 2 || command > 1) {
    return invalid();
  }
  const bool is_proxy = command == 1;  // LOCAL (0): the address block is ignored entirely
  if (bytes.size() < 14) {
    return incomplete();
  }
  const unsigned family = octet(bytes[13]) >> 4U;
  const unsigned transport = octet(bytes[13]) & 0xFU;
  if (is_proxy && (family >= kV2MinAddressBytes.size() || transport > kV2Dgram)) {
    return invalid();
  }
  if (bytes.size() < kV2FixedBytes) {
    return incomplete();
  }
  const std::size_t length = (octet(bytes[14]) << 8U) | octet(bytes[15]);
  if (kV2FixedBytes + length > kMaxProxyV2Bytes ||
      (is_proxy && length < kV2MinAddressBytes[family])) {
    return invalid();
  }
  if (bytes.size() < kV2FixedBytes + length) {
    return incomplete();
  }
  ProxyHeader header{kV2FixedBytes + length, std::nullopt, 2};
  if (is_proxy && transport != kV2Unspec && (family == kV2Inet || family == kV2Inet6)) {
    header.source = v2_source(bytes.substr(kV2FixedBytes), family);
  }
  return {Status::kComplete, header};
}

}  // namespace

ProxyHeaderParse parse_proxy_header(std::string_view bytes) noexcept {
  if (bytes.empty()) {
    return incomplete();
  }
  if (bytes[0] == kV1Signature[0]) {
    return parse_v1(bytes);
  }
  if (bytes[0] == kV2Signature[0]) {
    return parse_v2(bytes);
  }
  return invalid();
}

std::size_t proxy_header_safe_prefix(std::string_view bytes) noexcept {
  if (bytes.empty()) {
    return 0;
  }
  if (bytes[0] == kV1Signature[0]) {
    return std::min(bytes.find('\n'), bytes.size());  // npos: no '\n' yet, all of them
  }
  if (bytes[0] != kV2Signature[0]) {
    return 0;
  }
  if (bytes.size() < kV2FixedBytes) {
    return bytes.size();
  }
  const std::size_t length = (octet(bytes[14]) << 8U) | octet(bytes[15]);
  return std::min(bytes.size(), kV2FixedBytes + length);
}

}  // namespace sluice::proxy
