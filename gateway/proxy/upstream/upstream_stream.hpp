// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <boost/asio/async_result.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "gateway/http2/client_connection.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"
#include "gateway/tls/tls_socket.hpp"

// The stream of an upstream connection (docs/tls.md "Upstream TLS"; docs/architecture.md
// "Streams"): plain TCP, or TLS over it for a backend with `tls.enabled`, or one HTTP/2 stream
// on a connection shared with other requests for an `h2`/`h2c` backend (docs/grpc.md).
namespace sluice::proxy {

/// A TCP socket that may be wrapped in TLS (TlsSocket) after it connects, or an HTTP/2 stream
/// (http2::ClientStream) for a backend that speaks HTTP/2: one type for the worker's pools and
/// exchanges whatever each backend speaks. Reads and writes go to the HTTP/2 stream or the TLS
/// stream when there is one, else straight to the socket: a branch, no type erasure for the
/// socket's paths (the completion handler passes through unchanged, with its executor and
/// allocator). Confined to its worker's thread.
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

  /// Makes this the request stream `stream` of an HTTP/2 connection (the socket stays unused).
  void attach_h2(http2::ClientStreamPtr stream) { h2_ = std::move(stream); }
  /// The HTTP/2 stream, when this is one.
  [[nodiscard]] http2::ClientStream* h2() noexcept { return h2_.get(); }
  [[nodiscard]] const http2::ClientStream* h2() const noexcept { return h2_.get(); }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return net::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          if (h2_) {
            h2_->read(first_buffer(b), http2::ClientStream::Handler(std::move(handler)));
          } else if (tls_) {
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
          if (h2_) {
            h2_->write(b, http2::ClientStream::Handler(std::move(handler)));
          } else if (tls_) {
            tls_->async_write_some(b, std::move(handler));
          } else {
            socket_.async_write_some(b, std::move(handler));
          }
        },
        token, buffers);
  }

 private:
  template <typename Buffers>
  static net::mutable_buffer first_buffer(const Buffers& buffers) {
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers);
         ++it) {
      if (net::mutable_buffer b(*it); b.size() != 0) {
        return b;
      }
    }
    return {};
  }

  Socket socket_;  ///< moved into tls_ by start_tls()
  std::optional<Tls> tls_;
  http2::ClientStreamPtr h2_;
};

/// How much a relay's read of `s` asks for (relay_read_size() in exchange/relay.hpp). A socket's
/// asks for `most`. An HTTP/2 stream's response waits in memory already: its read asks for what
/// is there, or while nothing is for the room `buffer` has free (at least kH2Read), so a small
/// answer needs no buffer beyond the first read's and a large one still moves in reads of up to
/// `most` as it arrives (docs/grpc.md, "Memory").
inline std::size_t relay_read_size(const UpstreamStream& s, const beast::flat_buffer& buffer,
                                   std::size_t most) noexcept {
  constexpr std::size_t kH2Read = 4096;
  if (s.h2() == nullptr) {
    return most;
  }
  const std::size_t room = buffer.capacity() - buffer.size();
  return std::min(most, std::max({s.h2()->ready(), room, kH2Read}));
}

template <>
struct StreamOps<UpstreamStream> {
  static void cancel(UpstreamStream& s) noexcept {
    if (s.h2() != nullptr) {
      s.h2()->cancel();
    } else {
      StreamOps<Socket>::cancel(s.socket());
    }
  }
  /// (An HTTP/2 request ends with its own framing: nothing to shut.)
  static void shutdown_send(UpstreamStream& s) noexcept {
    if (s.h2() == nullptr) {
      StreamOps<Socket>::shutdown_send(s.socket());
    }
  }
  /// Closes the connection, or resets the HTTP/2 stream unless its response ended.
  static void close(UpstreamStream& s) noexcept {
    if (s.h2() != nullptr) {
      s.h2()->close();
    } else {
      StreamOps<Socket>::close(s.socket());
    }
  }
  [[nodiscard]] static bool is_open(const UpstreamStream& s) noexcept {
    return s.h2() != nullptr ? s.h2()->is_open() : s.socket().is_open();
  }
  /// The socket's synchronous fast path for plain connections, none over TLS; an HTTP/2 stream
  /// takes everything at once.
  template <typename Buffers>
  static std::optional<std::size_t> write_now(UpstreamStream& s, const Buffers& buffers,
                                              boost::system::error_code& ec) {
    if (s.h2() != nullptr) {
      return s.h2()->write_now(buffers, ec);
    }
    if (s.tls() != nullptr) {
      return std::nullopt;
    }
    return StreamOps<Socket>::write_now(s.socket(), buffers, ec);
  }
  static void prepare(UpstreamStream& s) noexcept {
    if (s.h2() == nullptr) {
      StreamOps<Socket>::prepare(s.socket());
    }
  }
  /// Whether a finished exchange may leave it in the pool: an HTTP/2 stream serves one request
  /// (its connection serves the next).
  [[nodiscard]] static bool poolable(const UpstreamStream& s) noexcept { return s.h2() == nullptr; }
};

}  // namespace sluice::proxy
