// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/async_result.hpp>
#include <optional>
#include <type_traits>
#include <utility>

#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"
#include "gateway/tls/tls_socket.hpp"

// The stream of an upstream connection (docs/tls.md "Upstream TLS"; docs/architecture.md
// "Streams"): plain TCP, or TLS over it for a backend with `tls.enabled`.
namespace sluice::proxy {

/// A TCP socket that may be wrapped in TLS (TlsSocket) after it connects: one type for the worker's
/// pools and exchanges whatever each backend speaks. Reads and writes go to the TLS stream when
/// there is one, else straight to the socket: one branch, no type erasure (the completion handler
/// passes through unchanged, with its executor and allocator). Confined to its worker's thread.
class UpstreamStream {
 public:
  using executor_type = Executor;
  using Tls = tls::TlsSocket;
  static_assert(std::is_same_v<tls::TcpSocket, Socket>, "TLS runs over the worker's socket type");

  explicit UpstreamStream(const Executor& executor) : socket_(executor) {}

  [[nodiscard]] executor_type get_executor() noexcept { return socket_.get_executor(); }
  /// The TCP socket (beneath the TLS stream once there is one).
  [[nodiscard]] Socket& socket() noexcept { return tls_ ? tls_->next_layer() : socket_; }
  [[nodiscard]] const Socket& socket() const noexcept {
    return tls_ ? tls_->next_layer() : socket_;
  }
  /// The TLS stream, after start_tls().
  [[nodiscard]] Tls* tls() noexcept { return tls_ ? &*tls_ : nullptr; }

  /// Wraps the connected socket in TLS under `context` (which outlives the stream's use); the
  /// caller sets the names on tls()->native_handle() and runs the client handshake.
  void start_tls(net::ssl::context& context) { tls_.emplace(std::move(socket_), context); }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return net::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          if (tls_) {
            tls_->async_read_some(b, std::move(handler));
          } else {
            socket_.async_read_some(b, std::move(handler));
          }
        },
        token, buffers);
  }
  template <typename Buffers, typename Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    return net::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          if (tls_) {
            tls_->async_write_some(b, std::move(handler));
          } else {
            socket_.async_write_some(b, std::move(handler));
          }
        },
        token, buffers);
  }

 private:
  Socket socket_;  ///< moved into tls_ by start_tls()
  std::optional<Tls> tls_;
};

template <>
struct StreamOps<UpstreamStream> {
  static void cancel(UpstreamStream& s) noexcept { StreamOps<Socket>::cancel(s.socket()); }
  static void shutdown_send(UpstreamStream& s) noexcept {
    StreamOps<Socket>::shutdown_send(s.socket());
  }
  static void close(UpstreamStream& s) noexcept { StreamOps<Socket>::close(s.socket()); }
  [[nodiscard]] static bool is_open(const UpstreamStream& s) noexcept {
    return s.socket().is_open();
  }
  /// The socket's synchronous fast path for plain connections; none over TLS.
  template <typename Buffers>
  static std::optional<std::size_t> write_now(UpstreamStream& s, const Buffers& buffers,
                                              boost::system::error_code& ec) {
    if (s.tls() != nullptr) {
      return std::nullopt;
    }
    return StreamOps<Socket>::write_now(s.socket(), buffers, ec);
  }
  static void prepare(UpstreamStream& s) noexcept { StreamOps<Socket>::prepare(s.socket()); }
};

}  // namespace sluice::proxy
