// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::config {

/// A backend address as written in config: an IP literal or a DNS name, and a port.
/// IP literals are stored in canonical form; IPv6 hosts are stored without brackets.
/// Value type: safe to read from many threads once built.
struct Endpoint {
  std::string host;
  std::uint16_t port = 0;

  bool operator==(const Endpoint&) const = default;
};

/// "host:port", or "[v6]:port" when the host is an IPv6 literal.
std::string to_string(const Endpoint& endpoint);

/// An address block such as 10.0.0.0/8 or ::1/128. Host bits of `network` beyond the prefix are
/// zero (parse_cidr guarantees it). Value type: safe to read from many threads once built.
struct Cidr {
  boost::asio::ip::address network;
  unsigned prefix_length = 0;

  /// True if `address` lies in the block. An IPv4-mapped IPv6 address (::ffff:a.b.c.d), as a
  /// dual-stack socket reports IPv4 peers, matches an IPv4 block, and vice versa.
  [[nodiscard]] bool contains(const boost::asio::ip::address& address) const;

  bool operator==(const Cidr&) const = default;
};

/// "network/prefix_length", e.g. "10.0.0.0/8".
std::string to_string(const Cidr& cidr);

/// Outcome of parsing a config string: a value, or a message saying what is wrong with it
/// (written to follow a JSON path, e.g. "must be host:port (e.g. 127.0.0.1:9001)").
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;

  [[nodiscard]] bool ok() const noexcept { return value.has_value(); }
};

/// Parses "host:port": host is an IPv4 literal, a bracketed IPv6 literal ("[::1]:9000") or an
/// RFC 1123 host name; port is 1..65535.
Parsed<Endpoint> parse_endpoint(std::string_view text);

/// Parses "address/prefix" or a bare address (a single host: /32 or /128). Rejects prefixes wider
/// than the family and addresses with host bits set beyond the prefix.
Parsed<Cidr> parse_cidr(std::string_view text);

/// Parses an IPv4 or IPv6 literal without brackets, e.g. "0.0.0.0" or "::1".
std::optional<boost::asio::ip::address> parse_ip_address(std::string_view text);

/// True for an RFC 1123 host name: dot-separated labels of 1-63 letters, digits and '-' (not at
/// either end of a label), at most 253 characters, last label not all digits (so "300.1.1.1" is
/// neither an IPv4 literal nor a name).
bool is_host_name(std::string_view text);

}  // namespace sluice::config
