// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/tls_socket.hpp"

#include <algorithm>
#include <cerrno>
#include <new>

namespace sluice::tls {

TlsSocket::TlsSocket(TcpSocket socket, net::ssl::context& context)
    : socket_(std::move(socket)), ssl_(SSL_new(context.native_handle())) {
  if (!ssl_) {
    throw std::bad_alloc();
  }
  if (!socket_.non_blocking()) {  // an accepted socket is already (StreamOps::prepare)
    boost::system::error_code ignored;
    socket_.non_blocking(true, ignored);
  }
  SSL_set_fd(ssl_.get(), static_cast<int>(socket_.native_handle()));
  SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

std::size_t TlsSocket::read_now(net::mutable_buffer into, boost::system::error_code& ec,
                                Want& want) {
  ec = {};
  if (into.size() == 0) {
    return 0;
  }
  SSL* ssl = ssl_.get();
  ERR_clear_error();
  errno = 0;
  std::size_t n = 0;
  const int r = SSL_read_ex(ssl, into.data(), std::min(into.size(), kMaxSslCall), &n);
  if (r == 1) {
    return n;
  }
  const int why = SSL_get_error(ssl, r);
  if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE) {
    want = why == SSL_ERROR_WANT_WRITE ? Want::kWrite : Want::kRead;
    ec = net::error::would_block;
    return 0;
  }
  ec = error_of(ssl, r);
  return 0;
}

void TlsSocket::send_close_notify() noexcept {
  ERR_clear_error();
  SSL_shutdown(ssl_.get());
  ERR_clear_error();
}

boost::system::error_code TlsSocket::error_of(SSL* ssl, int result) {
  switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_ZERO_RETURN:
      return net::error::eof;
    case SSL_ERROR_SYSCALL: {
      const int saved = errno;
      ERR_clear_error();
      return saved == 0 ? boost::system::error_code(net::ssl::error::stream_truncated)
                        : boost::system::error_code(saved, boost::system::system_category());
    }
    default: {
      const unsigned long code = ERR_get_error();
      ERR_clear_error();
      if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        return net::ssl::error::stream_truncated;
      }
      return {static_cast<int>(code), net::error::get_ssl_category()};
    }
  }
}

}  // namespace sluice::tls
