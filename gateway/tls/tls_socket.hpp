// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/append.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "gateway/core/edge_triggered_socket.hpp"
#include "gateway/tls/record_gather.hpp"

// TLS over the worker's socket with OpenSSL reading and writing the socket itself
// (docs/architecture.md "Streams", docs/decisions/0010-tls-on-the-socket.md).
namespace sluice::tls {

namespace net = boost::asio;

/// The worker's TCP socket, the type the data path names `proxy::Socket`
/// (gateway/proxy/io/net.hpp): bound to one io_context's executor, learning readiness from
/// edge-triggered events (gateway/core/edge_triggered_socket.hpp).
using TcpSocket = core::TcpSocket;

/// A TLS connection on a non-blocking TCP socket, OpenSSL doing the socket I/O itself
/// (SSL_set_fd): an operation calls SSL_read, SSL_write, SSL_do_handshake or SSL_shutdown, and
/// when OpenSSL wants the socket readable or writable, waits for that with the socket's
/// async_wait and calls again, as nginx and HAProxy drive OpenSSL. Compared with Asio's
/// ssl::stream it keeps no buffers of its own (Asio's holds four of 17 KB per connection, in
/// its engine and BIO pair) and copies nothing through a BIO pair: an idle connection costs
/// what OpenSSL keeps (its buffers are released when idle, SSL_MODE_RELEASE_BUFFERS), and a
/// record goes from OpenSSL to the kernel in one send.
///
/// The interface is the part of ssl::stream the data path uses. One read and one write may be
/// pending at once (the duplex relay); OpenSSL's object is confined to the worker's thread, as
/// the socket is. An operation that finishes at once completes through a post. Errors as Asio
/// reports them (a clean close_notify is eof, a close without one stream_truncated).
/// Move-only; owns the socket and the SSL object.
class TlsSocket {
 public:
  using executor_type = TcpSocket::executor_type;
  using handshake_type = net::ssl::stream_base::handshake_type;

  /// Takes the connected `socket`; the connection's SSL object comes from `context`. Writes
  /// may be partial (one record at a time) and retried from a moved buffer (see write()).
  TlsSocket(TcpSocket socket, net::ssl::context& context);

  [[nodiscard]] executor_type get_executor() noexcept { return socket_.get_executor(); }
  [[nodiscard]] TcpSocket& next_layer() noexcept { return socket_; }
  [[nodiscard]] const TcpSocket& next_layer() const noexcept { return socket_; }
  [[nodiscard]] SSL* native_handle() noexcept { return ssl_.get(); }

  template <typename Token>
  auto async_handshake(handshake_type type, Token&& token) {
    SSL* ssl = ssl_.get();
    if (type == net::ssl::stream_base::client) {
      SSL_set_connect_state(ssl);
    } else {
      SSL_set_accept_state(ssl);
    }
    return run<false>([](SSL* s) { return SSL_do_handshake(s); }, std::forward<Token>(token));
  }

  /// Reads into the first non-empty buffer (what one record holds, at most).
  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    net::mutable_buffer into;
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers);
         ++it) {
      if (net::mutable_buffer b(*it); b.size() != 0) {
        into = net::buffer(b.data(), std::min(b.size(), kMaxSslCall));
        break;
      }
    }
    return run<true>(
        [into](SSL* s) {
          std::size_t n = 0;
          const int r = SSL_read_ex(s, into.data(), into.size(), &n);
          return r == 1 ? static_cast<int>(n) : r;
        },
        std::forward<Token>(token), into.size() == 0);
  }

  /// What a read_now() that found nothing to read waits for (async_wait_ready()).
  enum class Want : unsigned char { kRead, kWrite };

  /// Reads what OpenSSL can give now into `into` (at most one record), without waiting. Returns
  /// the bytes read; or 0 with `ec` set: net::error::would_block when nothing can be read yet
  /// (then `want` says what to wait for), else the error an async_read_some() would report. For
  /// a reader that waits holding no buffer and reads into a shared one once bytes are there.
  std::size_t read_now(net::mutable_buffer into, boost::system::error_code& ec, Want& want);

  /// Waits for what the read_now() that has just failed with would_block wants. No system call
  /// starts the wait: OpenSSL's own receive (or send) has just failed with EAGAIN.
  template <typename Token>
  auto async_wait_ready(Want want, Token&& token) {
    return socket_.async_wait_drained(
        want == Want::kWrite ? TcpSocket::wait_write : TcpSocket::wait_read,
        std::forward<Token>(token));
  }

  /// Writes one record (at most 16 KiB) from `buffers`, small pieces gathered (gather_record()).
  template <typename Buffers, typename Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    const bool empty = net::buffer_size(buffers) == 0;
    return run<true>(
        [buffers](SSL* s) {
          // Copied again on a retry: OpenSSL may read on past the record it already made, and
          // the thread's scratch may have served another connection meanwhile.
          const net::const_buffer from = gather_record(buffers);
          std::size_t n = 0;
          const int r = SSL_write_ex(s, from.data(), from.size(), &n);
          return r == 1 ? static_cast<int>(n) : r;
        },
        std::forward<Token>(token), empty);
  }

  /// Sends close_notify if the socket takes it now, without waiting for the peer's (nginx's
  /// shutdown without lingering). Best effort: errors are dropped.
  void send_close_notify() noexcept;

  /// Sends close_notify, then waits for the peer's (or its close).
  template <typename Token>
  auto async_shutdown(Token&& token) {
    return run<false>(
        [](SSL* s) {
          const int r = SSL_shutdown(s);
          // 0: ours is sent, the peer's not yet read; asking again reads for it.
          return r == 0 ? SSL_shutdown(s) : r;
        },
        std::forward<Token>(token));
  }

 private:
  /// The error an OpenSSL failure means, as Asio's ssl::stream reports it.
  static boost::system::error_code error_of(SSL* ssl, int result);

  /// One operation: `call(ssl)` until it succeeds or fails, waiting for the socket in between.
  template <bool kHasSize, typename Call>
  struct Op {
    TlsSocket* self;
    Call call;
    bool empty;  ///< a read or write of nothing: completes at once with 0 bytes
    enum class Step { kStart, kWaited, kPosted } step = Step::kStart;
    boost::system::error_code result_ec = {};
    std::size_t result_n = 0;

    template <typename Self>
    void operator()(Self& op, boost::system::error_code ec = {}) {
      if (step == Step::kPosted) {
        return finish(op);
      }
      const bool started = step == Step::kStart;
      step = Step::kWaited;
      if (ec) {
        result_ec = ec;  // the wait failed: cancelled by a deadline, or the socket closed
        return started ? post(op) : finish(op);
      }
      SSL* ssl = self->ssl_.get();
      ERR_clear_error();
      errno = 0;
      const int r = empty ? 0 : call(ssl);
      if (empty || r > 0) {
        result_n = empty ? 0 : static_cast<std::size_t>(r);
        return started ? post(op) : finish(op);
      }
      const int why = SSL_get_error(ssl, r);
      if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE) {
        // OpenSSL's own receive or send has just failed with EAGAIN: the wait needs no call.
        self->socket_.async_wait_drained(
            why == SSL_ERROR_WANT_READ ? TcpSocket::wait_read : TcpSocket::wait_write,
            std::move(op));
        return;
      }
      result_ec = error_of(ssl, r);
      return started ? post(op) : finish(op);
    }

    template <typename Self>
    void post(Self& op) {
      step = Step::kPosted;
      net::post(self->socket_.get_executor(), std::move(op));
    }
    template <typename Self>
    void finish(Self& op) {
      if constexpr (kHasSize) {
        op.complete(result_ec, result_n);
      } else {
        op.complete(result_ec);
      }
    }
  };

  /// Runs `call` as an operation completing with (error_code, bytes) when `kHasSize`, else
  /// with (error_code).
  template <bool kHasSize, typename Call, typename Token>
  auto run(Call call, Token&& token, bool empty = false) {
    using Signature = std::conditional_t<kHasSize, void(boost::system::error_code, std::size_t),
                                         void(boost::system::error_code)>;
    return net::async_compose<Token, Signature>(Op<kHasSize, Call>{this, std::move(call), empty},
                                                token, socket_);
  }

  struct Free {
    void operator()(SSL* ssl) const noexcept { SSL_free(ssl); }
  };
  TcpSocket socket_;
  std::unique_ptr<SSL, Free> ssl_;
};

}  // namespace sluice::tls
