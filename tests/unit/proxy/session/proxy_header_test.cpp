// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/session/proxy_header.hpp"

#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::proxy::proxy_header_test {
namespace {

using boost::asio::ip::make_address;
using Endpoint = boost::asio::ip::tcp::endpoint;
using Status = ProxyHeaderStatus;
using namespace std::string_literals;

constexpr std::string_view kClientBytes = "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
constexpr std::string_view kTcp4Line = "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n";
constexpr std::string_view kTcp6Line = "PROXY TCP6 2001:db8::1 2001:db8::2 56324 443\r\n";
// The longest line a sender may write: 107 bytes.
constexpr std::string_view kLongestUnknown =
    "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";

Status status_of(std::string_view bytes) {
  return parse_proxy_header(bytes).status;
}

/// `fields` between "PROXY " and "\r\n".
std::string v1(std::string_view fields) {
  return "PROXY "s.append(fields).append("\r\n");
}

void put_be16(std::string& out, std::size_t value) {
  out.push_back(static_cast<char>((value >> 8U) & 0xFFU));
  out.push_back(static_cast<char>(value & 0xFFU));
}

/// A v2 header: signature, version/command byte, family/transport byte, the big-endian length
/// of `rest` (or `length` when given), then `rest`.
std::string v2(std::uint8_t version_command, std::uint8_t family_transport, std::string_view rest,
               std::optional<std::size_t> length = std::nullopt) {
  std::string out("\r\n\r\n\0\r\nQUIT\n", 12);
  out.push_back(static_cast<char>(version_command));
  out.push_back(static_cast<char>(family_transport));
  put_be16(out, length.value_or(rest.size()));
  out.append(rest);
  return out;
}

/// An INET address block: 192.0.2.1:56324 -> 198.51.100.2:443.
std::string inet_block() {
  std::string out{'\xC0', '\x00', '\x02', '\x01', '\xC6', '\x33', '\x64', '\x02'};
  put_be16(out, 56324);
  put_be16(out, 443);
  return out;
}

/// An INET6 address block: [2001:db8::1]:56324 -> [2001:db8::2]:443.
std::string inet6_block() {
  std::string out;
  for (const std::uint8_t last : {1, 2}) {
    const std::string prefix{'\x20', '\x01', '\x0D', '\xB8'};
    out.append(prefix).append(11, '\0').push_back(static_cast<char>(last));
  }
  put_be16(out, 56324);
  put_be16(out, 443);
  return out;
}

constexpr std::uint8_t kProxyCommand = 0x21;
constexpr std::uint8_t kLocalCommand = 0x20;

void expect_every_strict_prefix_incomplete(std::string_view header) {
  for (std::size_t n = 0; n < header.size(); ++n) {
    EXPECT_EQ(status_of(header.substr(0, n)), Status::kIncomplete) << "first " << n << " bytes";
  }
}

void expect_complete(std::string_view bytes, std::size_t size,
                     const std::optional<Endpoint>& source, int version) {
  const auto parse = parse_proxy_header(bytes);
  ASSERT_EQ(parse.status, Status::kComplete);
  EXPECT_EQ(parse.header.size, size);
  EXPECT_EQ(parse.header.source, source);
  EXPECT_EQ(parse.header.version, version);
}

TEST(ProxyHeaderV1Test, ParsesTcp4AndTcp6) {
  expect_complete(kTcp4Line, kTcp4Line.size(), Endpoint(make_address("192.0.2.1"), 56324), 1);
  expect_complete(kTcp6Line, kTcp6Line.size(), Endpoint(make_address("2001:db8::1"), 56324), 1);
  const auto mapped = v1("TCP6 ::ffff:192.0.2.1 ::1 0 65535");
  expect_complete(mapped, mapped.size(), Endpoint(make_address("::ffff:192.0.2.1"), 0), 1);
}

TEST(ProxyHeaderV1Test, UnknownKeepsThePeerWithOrWithoutAddresses) {
  expect_complete("PROXY UNKNOWN\r\n", 15, std::nullopt, 1);
  const auto with_addresses = v1("UNKNOWN 192.0.2.1 198.51.100.2 56324 443");
  expect_complete(with_addresses, with_addresses.size(), std::nullopt, 1);
  ASSERT_EQ(kLongestUnknown.size(), kMaxProxyV1Bytes);
  expect_complete(kLongestUnknown, kMaxProxyV1Bytes, std::nullopt, 1);
}

TEST(ProxyHeaderV1Test, SizeExcludesTheClientsBytes) {
  for (const auto line : {kTcp4Line, kTcp6Line, kLongestUnknown}) {
    const auto bytes = std::string(line).append(kClientBytes);
    EXPECT_EQ(parse_proxy_header(bytes).header.size, line.size()) << line;
  }
}

TEST(ProxyHeaderV1Test, EveryStrictPrefixIsIncomplete) {
  expect_every_strict_prefix_incomplete(kTcp4Line);
  expect_every_strict_prefix_incomplete(kTcp6Line);
  expect_every_strict_prefix_incomplete(kLongestUnknown);
  expect_every_strict_prefix_incomplete("PROXY UNKNOWN\r\n");
  expect_every_strict_prefix_incomplete(v1("TCP6 ::ffff:192.0.2.1 1:2:3:4:5:6:7:8 0 65535"));
}

TEST(ProxyHeaderV1Test, LineOfMoreThan107BytesIsInvalid) {
  const std::string prefix = "PROXY UNKNOWN ";
  const auto line_of = [&](std::size_t size) {
    return std::string(prefix).append(size - prefix.size() - 2, 'x').append("\r\n");
  };
  expect_complete(line_of(107), 107, std::nullopt, 1);
  EXPECT_EQ(status_of(line_of(108)), Status::kInvalid);
  // Known as soon as 106 bytes hold no CR: the line would end at byte 108 or later.
  EXPECT_EQ(status_of(line_of(108).substr(0, 105)), Status::kIncomplete);
  EXPECT_EQ(status_of(line_of(108).substr(0, 106)), Status::kInvalid);
}

TEST(ProxyHeaderV1Test, RejectsBadPorts) {
  for (const auto* ports : {"65536 443", "-1 443", "080 443", "+80 443", "80 0443", "8a 443",
                            "80 65536", "80 4430000", "80", "80 443 1"}) {
    const auto line = v1("TCP4 192.0.2.1 198.51.100.2 "s + ports);
    EXPECT_EQ(status_of(line), Status::kInvalid) << line;
  }
}

TEST(ProxyHeaderV1Test, RejectsBadAndMismatchedAddresses) {
  for (const auto* fields :
       {"TCP4 192.0.2.256 198.51.100.2 1 2", "TCP4 192.0.2 198.51.100.2 1 2",
        "TCP4 192.0.2.01 198.51.100.2 1 2", "TCP4 api.example.com 198.51.100.2 1 2",
        "TCP4 192.0.2.1  198.51.100.2 1 2", "TCP6 2001:db8::g 2001:db8::2 1 2",
        "TCP6 fe80::1%eth0 2001:db8::2 1 2", "TCP6 2001:db8:::1 2001:db8::2 1 2",
        "TCP4 2001:db8::1 198.51.100.2 1 2", "TCP4 192.0.2.1 2001:db8::2 1 2",
        "TCP6 192.0.2.1 2001:db8::2 1 2", "TCP6 2001:db8::1 198.51.100.2 1 2",
        "TCP5 192.0.2.1 198.51.100.2 1 2", "TCP4", "TCP4 ", "",
        "tcp4 192.0.2.1 198.51.100.2 1 2"}) {
    EXPECT_EQ(status_of(v1(fields)), Status::kInvalid) << fields;
  }
}

TEST(ProxyHeaderV1Test, RejectsStraySpacesAndLineEnds) {
  for (const auto* bytes : {"PROXY  TCP4 192.0.2.1 198.51.100.2 56324 443\r\n",
                            "PROXY TCP4  192.0.2.1 198.51.100.2 56324 443\r\n",
                            "PROXY TCP4 192.0.2.1 198.51.100.2  56324 443\r\n",
                            "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443 \r\n",
                            "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\n",
                            "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\rX",
                            "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\r\n", "PROXY UNKNOWN\n",
                            "PROXY UNKNOWN x\ry\r\n", "PROXY\r\n"}) {
    EXPECT_EQ(status_of(bytes), Status::kInvalid) << bytes;
  }
}

TEST(ProxyHeaderV1Test, InvalidAsSoonAsTheBytesCannotGrowIntoAHeader) {
  for (const auto* bytes :
       {"PROXY TCP5", "PROXY TCP4 192.0.2.1.", "PROXY TCP4 192.0.2.1 x",
        "PROXY TCP4 192.0.2.1 198.51.100.2 080", "PROXY TCP4 192.0.2.1 198.51.100.2 65536",
        "PROXY TCP6 :::", "PROXY TCP6 2001:db8::1 2001:db8::2 1 2 ", "PROXY TCP4 1.2.3.4 \r"}) {
    EXPECT_EQ(status_of(bytes), Status::kInvalid) << bytes;
  }
  for (const auto* bytes :
       {"PROXY TCP6 2001:db8:", "PROXY TCP6 ::ffff:192.0.2.", "PROXY UNK",
        "PROXY TCP4 192.0.2.1 198.51.100.2 6553", "PROXY TCP4 192.0.2.1 198.51.100.2 0 0\r"}) {
    EXPECT_EQ(status_of(bytes), Status::kIncomplete) << bytes;
  }
}

TEST(ProxyHeaderV2Test, ParsesInetAndInet6) {
  const auto tcp4 = v2(kProxyCommand, 0x11, inet_block());
  expect_complete(tcp4, 28, Endpoint(make_address("192.0.2.1"), 56324), 2);
  const auto udp4 = v2(kProxyCommand, 0x12, inet_block());
  expect_complete(udp4, 28, Endpoint(make_address("192.0.2.1"), 56324), 2);
  const auto tcp6 = v2(kProxyCommand, 0x21, inet6_block());
  expect_complete(tcp6, 52, Endpoint(make_address("2001:db8::1"), 56324), 2);
  const auto udp6 = v2(kProxyCommand, 0x22, inet6_block());
  expect_complete(udp6, 52, Endpoint(make_address("2001:db8::1"), 56324), 2);
}

TEST(ProxyHeaderV2Test, SkipsTlvsAfterTheAddresses) {
  // PP2_TYPE_AUTHORITY "api" and PP2_TYPE_NOOP with two bytes: not parsed, only skipped.
  const std::string tlvs(
      "\x02\x00\x03"
      "api"
      "\x04\x00\x02\xAB\xCD",
      11);
  const auto header = v2(kProxyCommand, 0x11, inet_block() + tlvs);
  expect_complete(header, 16 + 12 + 11, Endpoint(make_address("192.0.2.1"), 56324), 2);
  expect_complete(header + std::string(kClientBytes), 39,
                  Endpoint(make_address("192.0.2.1"), 56324), 2);
}

TEST(ProxyHeaderV2Test, LocalUnspecAndUnixKeepThePeer) {
  expect_complete(v2(kLocalCommand, 0x00, ""), 16, std::nullopt, 2);
  // LOCAL ignores the address block whatever its family says, even too short or unknown.
  expect_complete(v2(kLocalCommand, 0x11, inet_block()), 28, std::nullopt, 2);
  expect_complete(v2(kLocalCommand, 0x21, ""), 16, std::nullopt, 2);
  expect_complete(v2(kLocalCommand, 0xFF, ""), 16, std::nullopt, 2);
  expect_complete(v2(kProxyCommand, 0x00, ""), 16, std::nullopt, 2);
  expect_complete(v2(kProxyCommand, 0x00, "abc"), 19, std::nullopt, 2);
  expect_complete(v2(kProxyCommand, 0x10, inet_block()), 28, std::nullopt, 2);  // transport UNSPEC
  expect_complete(v2(kProxyCommand, 0x31, std::string(216, 'u')), 232, std::nullopt, 2);
  expect_complete(v2(kProxyCommand, 0x32, std::string(216, 'u')), 232, std::nullopt, 2);
}

TEST(ProxyHeaderV2Test, LengthTooShortForTheFamilyIsInvalid) {
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x11, std::string(11, '\0'))), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x21, std::string(35, '\0'))), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x31, std::string(215, '\0'))), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x21, inet_block())), Status::kInvalid);
  // Known from the 16 fixed bytes alone.
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x21, "", 35)), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x21, "", 36)), Status::kIncomplete);
}

TEST(ProxyHeaderV2Test, BadVersionCommandFamilyOrTransportIsInvalidAtOnce) {
  for (const std::uint8_t version_command : {0x11, 0x31, 0x01, 0xF1, 0x22, 0x2F}) {
    const auto header = v2(version_command, 0x11, inet_block());
    EXPECT_EQ(status_of(header.substr(0, 13)), Status::kInvalid) << int{version_command};
  }
  for (const std::uint8_t family_transport : {0x41, 0xF1, 0x13, 0x1F, 0x03}) {
    const auto header = v2(kProxyCommand, family_transport, inet6_block());
    EXPECT_EQ(status_of(header.substr(0, 14)), Status::kInvalid) << int{family_transport};
  }
}

TEST(ProxyHeaderV2Test, LengthOverTheCapIsInvalidFromTheFixedBytes) {
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x00, "", kMaxProxyV2Bytes - 16 + 1)), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x00, "", 0xFFFF)), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kLocalCommand, 0x00, "", 0xFFFF)), Status::kInvalid);
  EXPECT_EQ(status_of(v2(kProxyCommand, 0x00, "", kMaxProxyV2Bytes - 16)), Status::kIncomplete);
  const auto largest = v2(kProxyCommand, 0x11, std::string(kMaxProxyV2Bytes - 16, '\0'));
  expect_complete(largest, kMaxProxyV2Bytes, Endpoint(make_address("0.0.0.0"), 0), 2);
}

TEST(ProxyHeaderV2Test, EveryStrictPrefixIsIncomplete) {
  expect_every_strict_prefix_incomplete(v2(kProxyCommand, 0x11, inet_block() + "tlv"));
  expect_every_strict_prefix_incomplete(v2(kProxyCommand, 0x21, inet6_block()));
  expect_every_strict_prefix_incomplete(v2(kLocalCommand, 0x00, ""));
  expect_every_strict_prefix_incomplete(v2(kProxyCommand, 0x31, std::string(216, 'u')));
}

TEST(ProxyHeaderDetectTest, AnythingElseIsInvalidFromItsFirstDistinctByte) {
  EXPECT_EQ(status_of(""), Status::kIncomplete);
  EXPECT_EQ(status_of("P"), Status::kIncomplete);
  EXPECT_EQ(status_of("PROXY"), Status::kIncomplete);
  EXPECT_EQ(status_of("\r\n\r\n"), Status::kIncomplete);
  for (const auto& bytes :
       {"G"s, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n"s, "\x16\x03\x01\x02\x00"s, "PROXX"s,
        "PROXY\t"s, "proxy "s, "\r\n\r\nGET"s, "\r\n\r\n\0\r\nQUIX"s, " PROXY "s, "\0"s, "\n"s,
        "\xFF"s}) {
    EXPECT_EQ(status_of(bytes), Status::kInvalid) << bytes;
  }
}

TEST(ProxyHeaderSafePrefixTest, NeverReachesPastTheHeader) {
  const std::vector<std::string> headers = {std::string(kTcp4Line),
                                            std::string(kTcp6Line),
                                            std::string(kLongestUnknown),
                                            "PROXY UNKNOWN\r\n",
                                            v2(kProxyCommand, 0x11, inet_block() + "tlv"),
                                            v2(kProxyCommand, 0x21, inet6_block()),
                                            v2(kLocalCommand, 0x00, "")};
  for (const auto& header : headers) {
    // Client bytes with a '\n' and with bytes of the v2 signature in them.
    const auto bytes = header + std::string(kClientBytes) + std::string("\r\n\r\n\0\r\nQUIT\n", 12);
    for (std::size_t n = 0; n <= bytes.size(); ++n) {
      const auto safe = proxy_header_safe_prefix(std::string_view(bytes).substr(0, n));
      if (n < header.size()) {
        EXPECT_EQ(safe, n) << "all of a strict prefix is header: " << header;
      } else {
        EXPECT_LE(safe, header.size()) << n << " bytes of " << header;
      }
    }
  }
}

TEST(ProxyHeaderSafePrefixTest, ClaimsNothingOfOtherProtocols) {
  EXPECT_EQ(proxy_header_safe_prefix(""), 0U);
  EXPECT_EQ(proxy_header_safe_prefix("GET / HTTP/1.1\r\n"), 0U);
}

}  // namespace
}  // namespace sluice::proxy::proxy_header_test
