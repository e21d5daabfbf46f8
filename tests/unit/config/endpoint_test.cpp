// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/endpoint.hpp"

#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>
#include <string>

namespace sluice::config {
namespace {

using boost::asio::ip::make_address;

Endpoint endpoint_of(std::string_view text) {
  auto parsed = parse_endpoint(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error;
  return parsed.value.value_or(Endpoint{});
}

std::string endpoint_error(std::string_view text) {
  const auto parsed = parse_endpoint(text);
  EXPECT_FALSE(parsed.ok()) << text;
  return parsed.error;
}

Cidr cidr_of(std::string_view text) {
  auto parsed = parse_cidr(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error;
  return parsed.value.value_or(Cidr{});
}

std::string cidr_error(std::string_view text) {
  const auto parsed = parse_cidr(text);
  EXPECT_FALSE(parsed.ok()) << text;
  return parsed.error;
}

TEST(EndpointTest, ParsesIpv4HostAndPort) {
  EXPECT_EQ(endpoint_of("127.0.0.1:9001"), (Endpoint{"127.0.0.1", 9001}));
  EXPECT_EQ(endpoint_of("10.1.2.3:1"), (Endpoint{"10.1.2.3", 1}));
  EXPECT_EQ(endpoint_of("10.1.2.3:65535"), (Endpoint{"10.1.2.3", 65535}));
}

TEST(EndpointTest, ParsesBracketedIpv6AndStoresItCanonicalWithoutBrackets) {
  EXPECT_EQ(endpoint_of("[::1]:9000"), (Endpoint{"::1", 9000}));
  EXPECT_EQ(endpoint_of("[2001:DB8:0:0::1]:80"), (Endpoint{"2001:db8::1", 80}));
}

TEST(EndpointTest, ParsesHostNames) {
  EXPECT_EQ(endpoint_of("localhost:8080"), (Endpoint{"localhost", 8080}));
  EXPECT_EQ(endpoint_of("users-1.svc.cluster.local:80"),
            (Endpoint{"users-1.svc.cluster.local", 80}));
  EXPECT_EQ(endpoint_of("3com.example:80"), (Endpoint{"3com.example", 80}));
}

TEST(EndpointTest, FormatsIpv6WithBrackets) {
  EXPECT_EQ(to_string(Endpoint{"::1", 9000}), "[::1]:9000");
  EXPECT_EQ(to_string(Endpoint{"127.0.0.1", 9001}), "127.0.0.1:9001");
  EXPECT_EQ(to_string(Endpoint{"example.com", 443}), "example.com:443");
}

TEST(EndpointTest, RejectsMissingPortOrHost) {
  const std::string generic = "must be host:port (e.g. 127.0.0.1:9001)";
  EXPECT_EQ(endpoint_error("127.0.0.1"), generic);
  EXPECT_EQ(endpoint_error(""), generic);
  EXPECT_EQ(endpoint_error(":9001"), generic);
  EXPECT_EQ(endpoint_error("[::1]"), generic);
  EXPECT_EQ(endpoint_error("[::1]9000"), generic);
  EXPECT_EQ(endpoint_error("127.0.0.1:"), "missing port (e.g. 127.0.0.1:9001)");
}

TEST(EndpointTest, RejectsMalformedHosts) {
  const std::string generic = "must be host:port (e.g. 127.0.0.1:9001)";
  EXPECT_EQ(endpoint_error("::1:9000"), generic);          // IPv6 needs brackets
  EXPECT_EQ(endpoint_error("[127.0.0.1]:9000"), generic);  // brackets are for IPv6 only
  EXPECT_EQ(endpoint_error("[::g]:9000"), generic);
  EXPECT_EQ(endpoint_error("300.1.1.1:80"), generic);  // not IPv4, not a name either
  EXPECT_EQ(endpoint_error("-bad.example:80"), generic);
  EXPECT_EQ(endpoint_error("bad-.example:80"), generic);
  EXPECT_EQ(endpoint_error("a..b:80"), generic);
  EXPECT_EQ(endpoint_error("under_score:80"), generic);
  EXPECT_EQ(endpoint_error("http://x:80"), generic);
  EXPECT_EQ(endpoint_error(std::string(64, 'a') + ":80"), generic);  // label over 63
}

TEST(EndpointTest, RejectsBadPortsWithSpecificMessages) {
  EXPECT_EQ(endpoint_error("127.0.0.1:0"), "port must be between 1 and 65535");
  EXPECT_EQ(endpoint_error("127.0.0.1:65536"), "port must be between 1 and 65535");
  EXPECT_EQ(endpoint_error("127.0.0.1:99999999999999"), "port must be between 1 and 65535");
  EXPECT_EQ(endpoint_error("127.0.0.1:http"), "port must be a number");
  EXPECT_EQ(endpoint_error("127.0.0.1:-1"), "port must be a number");
  EXPECT_EQ(endpoint_error("127.0.0.1:80 "), "port must be a number");
  EXPECT_EQ(endpoint_error("[::1]:x"), "port must be a number");
}

TEST(EndpointTest, HostNameRules) {
  EXPECT_TRUE(is_host_name("a"));
  EXPECT_TRUE(is_host_name("xn--bcher-kva.example"));
  EXPECT_TRUE(is_host_name(std::string(63, 'a') + ".com"));
  EXPECT_FALSE(is_host_name(""));
  EXPECT_FALSE(is_host_name("example.com."));
  EXPECT_FALSE(is_host_name("1.2.3.4"));
  EXPECT_FALSE(is_host_name(std::string(254, 'a')));
}

TEST(EndpointTest, ParsesIpLiteralsOnly) {
  EXPECT_TRUE(parse_ip_address("0.0.0.0"));
  EXPECT_TRUE(parse_ip_address("::"));
  EXPECT_FALSE(parse_ip_address("localhost"));
  EXPECT_FALSE(parse_ip_address("1.2.3"));
  EXPECT_FALSE(parse_ip_address("fe80::1%eth0"));
  EXPECT_FALSE(parse_ip_address(std::string_view("1.2.3.4\0x", 9)));
  EXPECT_FALSE(parse_ip_address(""));
}

TEST(EndpointTest, AnIpLiteralParsesToWhatAsioMakesOfIt) {
  // Each literal goes to the one parser its text calls for (':' or not); the address must be
  // the one make_address() finds trying both.
  for (const char* text : {"1.2.3.4", "255.255.255.255", "10.0.0.1", "::1", "2001:db8::7",
                           "::ffff:203.0.113.66", "::ffff:cb00:7142", "FE80::1", "::"}) {
    const auto parsed = parse_ip_address(text);
    ASSERT_TRUE(parsed) << text;
    EXPECT_EQ(*parsed, boost::asio::ip::make_address(text)) << text;
  }
  for (const char* text : {"1.2.3.4.5", "256.1.1.1", "1..2.3", "1.2.3.4:80", ":::", "1:2", "."}) {
    EXPECT_FALSE(parse_ip_address(text)) << text;
  }
}

TEST(CidrTest, ParsesNetworksAndBareAddresses) {
  EXPECT_EQ(cidr_of("10.0.0.0/8"), (Cidr{make_address("10.0.0.0"), 8}));
  EXPECT_EQ(cidr_of("127.0.0.1"), (Cidr{make_address("127.0.0.1"), 32}));
  EXPECT_EQ(cidr_of("::1"), (Cidr{make_address("::1"), 128}));
  EXPECT_EQ(cidr_of("fd00::/8"), (Cidr{make_address("fd00::"), 8}));
  EXPECT_EQ(cidr_of("0.0.0.0/0"), (Cidr{make_address("0.0.0.0"), 0}));
  EXPECT_EQ(to_string(cidr_of("192.168.0.0/16")), "192.168.0.0/16");
}

TEST(CidrTest, RejectsMalformedCidrs) {
  const std::string message = "not an IP address or CIDR";
  EXPECT_EQ(cidr_error("10.0.0.0/33"), message);
  EXPECT_EQ(cidr_error("::/129"), message);
  EXPECT_EQ(cidr_error("10.0.0.0/"), message);
  EXPECT_EQ(cidr_error("10.0.0.0/-1"), message);
  EXPECT_EQ(cidr_error("10.0.0.0/8/8"), message);
  EXPECT_EQ(cidr_error("/8"), message);
  EXPECT_EQ(cidr_error("example.com/8"), message);
  EXPECT_EQ(cidr_error(""), message);
}

TEST(CidrTest, RejectsHostBitsAndSuggestsTheNetwork) {
  EXPECT_EQ(cidr_error("10.0.0.1/8"), "host bits set; did you mean 10.0.0.0/8?");
  EXPECT_EQ(cidr_error("192.168.1.130/25"), "host bits set; did you mean 192.168.1.128/25?");
  EXPECT_EQ(cidr_error("fd00::1/64"), "host bits set; did you mean fd00::/64?");
}

TEST(CidrTest, ContainsAddressesInsideThePrefixOnly) {
  const auto cidr = cidr_of("192.168.1.128/25");
  EXPECT_TRUE(cidr.contains(make_address("192.168.1.128")));
  EXPECT_TRUE(cidr.contains(make_address("192.168.1.255")));
  EXPECT_FALSE(cidr.contains(make_address("192.168.1.127")));
  EXPECT_FALSE(cidr.contains(make_address("192.168.2.200")));
  EXPECT_FALSE(cidr.contains(make_address("::1")));
}

TEST(CidrTest, HostCidrContainsOnlyThatHost) {
  const auto v4 = cidr_of("127.0.0.1");
  EXPECT_TRUE(v4.contains(make_address("127.0.0.1")));
  EXPECT_FALSE(v4.contains(make_address("127.0.0.2")));
  const auto v6 = cidr_of("::1/128");
  EXPECT_TRUE(v6.contains(make_address("::1")));
  EXPECT_FALSE(v6.contains(make_address("::2")));
}

TEST(CidrTest, ZeroPrefixContainsItsWholeFamily) {
  EXPECT_TRUE(cidr_of("0.0.0.0/0").contains(make_address("203.0.113.9")));
  EXPECT_TRUE(cidr_of("::/0").contains(make_address("2001:db8::1")));
}

TEST(CidrTest, Ipv6PrefixesCompareBitByBit) {
  const auto cidr = cidr_of("2001:db8:abcd:1200::/55");
  EXPECT_TRUE(cidr.contains(make_address("2001:db8:abcd:13ff::1")));
  EXPECT_FALSE(cidr.contains(make_address("2001:db8:abcd:1400::")));
}

TEST(CidrTest, MatchesIpv4MappedPeersAgainstIpv4Blocks) {
  EXPECT_TRUE(cidr_of("10.0.0.0/8").contains(make_address("::ffff:10.1.2.3")));
  EXPECT_FALSE(cidr_of("10.0.0.0/8").contains(make_address("::ffff:11.1.2.3")));
  EXPECT_TRUE(cidr_of("::ffff:10.0.0.0/104").contains(make_address("10.9.9.9")));
}

}  // namespace
}  // namespace sluice::config
