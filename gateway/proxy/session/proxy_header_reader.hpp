// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <memory_resource>
#include <optional>
#include <string_view>

#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/session/proxy_header.hpp"

namespace sluice::proxy {

/// Why a connection of a `proxy_protocol` listener was closed before its first request.
enum class ProxyHeaderRefusal { kNone, kUntrustedPeer, kMalformed, kClosed, kTimeout };

[[nodiscard]] constexpr std::string_view to_string(ProxyHeaderRefusal refusal) noexcept {
  switch (refusal) {
    case ProxyHeaderRefusal::kNone:
      return "none";
    case ProxyHeaderRefusal::kUntrustedPeer:
      return "untrusted_peer";
    case ProxyHeaderRefusal::kMalformed:
      return "malformed";
    case ProxyHeaderRefusal::kClosed:
      return "closed";
    case ProxyHeaderRefusal::kTimeout:
      return "timeout";
  }
  return "none";
}

/// Reads the PROXY protocol header a connection starts with (docs/proxy-protocol.md), and not
/// one byte more: what follows is the client's own (a request head, or a TLS ClientHello that
/// OpenSSL reads from the descriptor itself). It peeks at what has arrived, consumes only the
/// bytes that are certainly header (everything, until the header's end is in sight), and waits
/// for more, so a header sent one byte at a time costs no busy loop. The caller arms
/// `deadline` (its expiry cancels the socket's wait) and sets the socket non-blocking
/// (StreamOps::prepare). Returns the header, or nullopt with the reason in `refusal`. Runs on
/// the socket's worker thread; never throws.
inline Task<std::optional<ProxyHeader>> read_proxy_header(Socket& socket, const Deadline& deadline,
                                                          std::pmr::memory_resource* ops,
                                                          ProxyHeaderRefusal& refusal) {
  std::array<char, kMaxProxyV2Bytes> bytes{};
  std::size_t have = 0;
  for (;;) {
    auto [wec] = co_await socket.async_wait(tcp::socket::wait_read, pooled(ops));
    if (wec) {
      refusal = deadline.expired() ? ProxyHeaderRefusal::kTimeout : ProxyHeaderRefusal::kClosed;
      co_return std::nullopt;
    }
    boost::system::error_code ec;
    const std::size_t peeked = socket.receive(net::buffer(bytes.data() + have, bytes.size() - have),
                                              tcp::socket::message_peek, ec);
    if (ec == net::error::would_block || ec == net::error::try_again) {
      continue;  // (a spurious wake-up)
    }
    if (ec || peeked == 0) {
      refusal = ProxyHeaderRefusal::kClosed;
      co_return std::nullopt;
    }
    const ProxyHeaderParse parse = parse_proxy_header({bytes.data(), have + peeked});
    if (parse.status == ProxyHeaderStatus::kInvalid) {
      refusal = ProxyHeaderRefusal::kMalformed;
      co_return std::nullopt;
    }
    // Incomplete: every byte seen is header. Complete: exactly its bytes are.
    const std::size_t take =
        parse.status == ProxyHeaderStatus::kComplete ? parse.header.size - have : peeked;
    for (std::size_t taken = 0; taken < take;) {
      const std::size_t n =
          socket.receive(net::buffer(bytes.data() + have + taken, take - taken), 0, ec);
      if (ec) {  // (the bytes were peeked: they are there to read)
        refusal = ProxyHeaderRefusal::kClosed;
        co_return std::nullopt;
      }
      taken += n;
    }
    have += take;
    if (parse.status == ProxyHeaderStatus::kComplete) {
      co_return parse.header;
    }
    if (have == bytes.size()) {
      refusal = ProxyHeaderRefusal::kMalformed;  // (the parser caps sizes below this)
      co_return std::nullopt;
    }
  }
}

}  // namespace sluice::proxy
