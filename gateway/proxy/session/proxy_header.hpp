// SPDX-License-Identifier: Apache-2.0
// The PROXY protocol header (versions 1 and 2) that an L4 balancer puts in front of a
// connection's own bytes on a listener with "proxy_protocol": true (docs/proxy-protocol.md).
// Pure parsing: no I/O, no exceptions, no allocation.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <optional>
#include <string_view>

namespace sluice::proxy {

/// Longest v1 header, the "\r\n" included.
inline constexpr std::size_t kMaxProxyV1Bytes = 107;
/// Longest v2 header we accept: the 16 fixed bytes, then at most 2048 of addresses and TLVs.
inline constexpr std::size_t kMaxProxyV2Bytes = 16 + 2048;

/// What a PROXY header carried (docs/proxy-protocol.md). A plain value: thread-safety is that of
/// any value (copies are independent).
struct ProxyHeader {
  std::size_t size = 0;  ///< bytes of the header, to consume before the client's own bytes
  /// The client's address and port when the header carried one (v1 TCP4/TCP6, v2 PROXY command
  /// with AF_INET/AF_INET6 over STREAM or DGRAM); nullopt for v1 UNKNOWN, v2 LOCAL, v2 UNSPEC or
  /// AF_UNIX: the connection's own peer address stands.
  std::optional<boost::asio::ip::tcp::endpoint> source;
  int version = 0;  ///< 1 or 2
};

/// Whether the bytes so far hold a header, may still begin one, or cannot.
enum class ProxyHeaderStatus { kComplete, kIncomplete, kInvalid };

/// The answer of parse_proxy_header(); `header` is meaningful only when `status` is kComplete.
/// A plain value.
struct ProxyHeaderParse {
  ProxyHeaderStatus status = ProxyHeaderStatus::kInvalid;
  ProxyHeader header;
};

/// Parses the bytes a connection started with. kIncomplete: every byte given so far can still
/// be the start of a valid header (need more); kInvalid: they cannot (wrong signature, bad
/// syntax, v1 longer than 107 bytes, v2 longer than kMaxProxyV2Bytes, ...); kComplete:
/// header.size bytes form a valid header (bytes after it are the client's and are NOT looked at).
/// The first byte decides the version: 'P' starts v1, '\r' v2, anything else is kInvalid.
/// For v2 LOCAL the address block is ignored whatever its family, as the protocol asks; for v2
/// PROXY the family and transport must be known ones and the length must hold their addresses.
/// Thread-safe (pure).
[[nodiscard]] ProxyHeaderParse parse_proxy_header(std::string_view bytes) noexcept;

/// How many of the leading bytes of `bytes` (a prefix that parse_proxy_header() called
/// kIncomplete) are certainly part of the header, so a reader may consume them without reading
/// past the header: for v1 everything before the first '\n' (the header ends at "\r\n"), for v2
/// min(bytes.size(), 16 + length) once 16 bytes are there, else all of them; 0 for bytes that
/// start neither version. (A reader peeks, consumes what is certainly header, and never reads
/// the client's first bytes.) Never more than the header's size when `bytes` starts with a
/// valid header, whatever follows it. Thread-safe (pure).
[[nodiscard]] std::size_t proxy_header_safe_prefix(std::string_view bytes) noexcept;

}  // namespace sluice::proxy
