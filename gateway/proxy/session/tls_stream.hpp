// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"
#include "gateway/tls/tls_socket.hpp"

// A client connection over TLS (docs/tls.md): OpenSSL on the worker's socket (TlsSocket), and
// what the data path needs of it beyond reading and writing (docs/architecture.md, "Streams").
namespace sluice::proxy {

using TlsStream = tls::TlsSocket;

template <>
struct StreamOps<TlsStream> {
  /// Fails the pending operations: those of the TCP socket beneath, which the TLS operation
  /// waits on.
  static void cancel(TlsStream& s) noexcept { StreamOps<Socket>::cancel(s.next_layer()); }
  /// close_gracefully() ends the TLS session with close_notify (async_shutdown) instead of a
  /// lingering read, so a response delimited by closing cannot be truncated unnoticed.
  static constexpr bool kSendsCloseNotify = true;
  /// FIN, after close_notify.
  static void shutdown_send(TlsStream& s) noexcept {
    StreamOps<Socket>::shutdown_send(s.next_layer());
  }
  /// close() alone: close_notify (or the peer's end) came first, and close() sends the FIN; a
  /// shutdown() before it would fail on nearly every connection (the client has usually gone).
  static void close(TlsStream& s) noexcept {
    boost::system::error_code ignored;
    s.next_layer().close(ignored);
  }
  [[nodiscard]] static bool is_open(const TlsStream& s) noexcept {
    return s.next_layer().is_open();
  }
  /// No synchronous fast path: every write goes through the TLS engine asynchronously.
  template <typename Buffers>
  static std::optional<std::size_t> write_now(TlsStream&, const Buffers&,
                                              boost::system::error_code&) {
    return std::nullopt;
  }
  static void prepare(TlsStream& s) noexcept { StreamOps<Socket>::prepare(s.next_layer()); }
};

}  // namespace sluice::proxy
