// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/socket.h>

#include <array>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <cerrno>
#include <cstddef>
#include <iterator>
#include <optional>

#include "gateway/proxy/io/net.hpp"

namespace sluice::proxy {

/// What the data path needs of a stream beyond reading and writing, one specialization per
/// stream type: the session, the exchange and the relay are templates over the stream, so a TCP
/// socket, a TLS stream or Beast's in-memory test stream pass through the same code
/// (docs/architecture.md, "Streams"). The primary template is for `Socket`; tests specialise it
/// for `beast::test::basic_stream` (tests/support/test_stream_ops.hpp).
template <typename Stream>
struct StreamOps {
  /// write_now() copies a write of at most this many bytes in more than two pieces into one.
  static constexpr std::size_t kFlatten = 2048;

  /// Fails the stream's pending operations (a deadline expired), leaving it open.
  static void cancel(Stream& s) noexcept {
    boost::system::error_code ignored;
    s.cancel(ignored);
  }
  /// Sends FIN: the peer reads end of stream once it has read what was sent.
  static void shutdown_send(Stream& s) noexcept {
    boost::system::error_code ignored;
    s.shutdown(tcp::socket::shutdown_send, ignored);
  }
  static void close(Stream& s) noexcept {
    boost::system::error_code ignored;
    s.shutdown(tcp::socket::shutdown_both, ignored);
    s.close(ignored);
  }
  [[nodiscard]] static bool is_open(const Stream& s) noexcept { return s.is_open(); }
  /// Writes as much of `buffers` as the socket takes now, without waiting (the common case: a
  /// head and a small body leave in one sendmsg with no trip through the event loop). Returns
  /// the bytes written, or nullopt when the stream has no such fast path.
  template <typename Buffers>
  static std::optional<std::size_t> write_now(Stream& s, const Buffers& buffers,
                                              boost::system::error_code& ec) {
    std::size_t n = 0;
    const std::size_t total = net::buffer_size(buffers);
    if (total <= kFlatten &&
        std::distance(net::buffer_sequence_begin(buffers), net::buffer_sequence_end(buffers)) > 2) {
      // A head in many small pieces: one contiguous copy is cheaper for the kernel than an
      // iovec per piece (the copy is a few hundred bytes; each iovec costs the kernel more).
      thread_local std::array<char, kFlatten> flat;
      net::buffer_copy(net::buffer(flat), buffers);
      n = net::write(s, net::buffer(flat.data(), total), ec);
    } else {
      n = net::write(s, buffers, ec);
    }
    if (ec == net::error::would_block || ec == net::error::try_again) {
      ec = {};
    }
    return n;
  }
  /// Prepares a freshly accepted or connected socket (non-blocking user mode for write_now).
  static void prepare(Stream& s) noexcept {
    boost::system::error_code ignored;
    s.non_blocking(true, ignored);
    s.set_option(tcp::no_delay(true), ignored);
  }
};

/// Whether a connection that finished an exchange cleanly may be pooled for the next: streams
/// whose StreamOps say otherwise (an HTTP/2 request stream) are closed instead.
template <typename Stream>
[[nodiscard]] bool poolable(const Stream& s) noexcept {
  if constexpr (requires { StreamOps<Stream>::poolable(s); }) {
    return StreamOps<Stream>::poolable(s);
  } else {
    return true;
  }
}

/// What write_now() did: everything written (`done`), or `written` bytes of it, or an error.
struct WriteStart {
  bool done = false;
  std::size_t written = 0;
  boost::system::error_code ec;
};

/// Writes what the stream takes of `buffers` at once, without waiting (a head and a small body
/// usually leave in this one sendmsg, with no trip through the event loop).
template <typename Stream, typename Buffers>
WriteStart write_now(Stream& s, const Buffers& buffers) {
  WriteStart w;
  if (const auto n = StreamOps<Stream>::write_now(s, buffers, w.ec)) {
    w.written = *n;
    w.done = static_cast<bool>(w.ec) || w.written == net::buffer_size(buffers);
  }
  return w;
}

/// The rest of a write that write_now() began (`buffers` is a copyable buffer sequence). The
/// caller arms the stream's write deadline around it. Never throws.
template <typename Stream, typename Buffers>
Task<boost::system::error_code> write_rest(Stream& s, const Buffers& buffers, std::size_t written,
                                           std::pmr::memory_resource* ops) {
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(written);
  auto [ec, n] = co_await net::async_write(s, rest, pooled(ops));
  co_return ec;
}

/// write_now(), then write_rest() when needed: for paths where the extra coroutine frame does not
/// matter (gateway replies, errors).
template <typename Stream, typename Buffers>
Task<boost::system::error_code> write_all(Stream& s, const Buffers& buffers,
                                          std::pmr::memory_resource* ops) {
  const WriteStart w = write_now(s, buffers);
  if (w.done) {
    co_return w.ec;
  }
  co_return co_await write_rest(s, buffers, w.written, ops);
}

}  // namespace sluice::proxy
