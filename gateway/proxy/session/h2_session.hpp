// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <memory_resource>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "gateway/proxy/session/h2_goaways.hpp"
#include "gateway/proxy/session/h2_stream.hpp"

// One HTTP/2 connection; each of its streams is served by h2_stream.hpp.
namespace sluice::proxy::detail {

constexpr std::size_t kH2BusyRead = 16384;    // a read while streams are served
constexpr std::size_t kH2WriteBatch = 65536;  // frames gathered into one write
/// Streams whose reader waits for bytes holding no buffer, then reads what came without waiting
/// (TlsSocket's read_now() and async_wait_ready()).
template <typename S>
concept ReadsWhenReady = requires {
  typename S::Want;
}
&&requires(S& s, net::mutable_buffer b, boost::system::error_code& ec, typename S::Want& w) {
  { s.read_now(b, ec, w) } -> std::same_as<std::size_t>;
};

/// The worker thread's buffer for one read of an HTTP/2 client connection that reads when
/// ready: the bytes are taken in (Connection::receive()) before anything else runs on the
/// thread, so every connection of the thread can share it.
inline net::mutable_buffer read_scratch() {
  thread_local std::array<char, kH2BusyRead> scratch;
  return net::buffer(scratch);
}

/// How long a connection idles before nghttp2's frame buffer pages go back to the kernel.
constexpr core::Duration kH2IdleRelease = std::chrono::seconds(1);

/// One HTTP/2 connection (docs/http2.md): a reading coroutine and a writer (a chain of posted
/// writes, write_more()) around an http2::Connection, and one coroutine per stream
/// (serve_h2_stream()). Lives in its run()'s
/// caller frame; confined to the worker's thread.
template <typename S, typename Up>
class H2Session final : public http2::ConnectionHost {
 public:
  using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                          net::wait_traits<std::chrono::steady_clock>, Executor>;

  H2Session(S& stream, const Peer& peer, const http2::Settings& settings, SessionEnv& env,
            UpstreamContext<Up>& up, const GoawayCounters* goaways)
      : stream_(stream),
        peer_(peer),
        goaways_(goaways),
        env_(env),
        up_(up),
        conn_(settings, *this, stream.get_executor(), env.services.clock),
        done_(stream.get_executor()),
        read_deadline_(env.sweep, &cancel_stream<S>, &stream),
        write_deadline_(env.sweep, &cancel_stream<S>, &stream),
        idle_release_(env.sweep, &on_idle, this) {}

  /// Serves the connection until it ends, then closes it (close_notify on TLS).
  Task<void> run(core::TimePoint accepted) {
    SessionEntry entry(env_.sessions, &on_drain, &on_cut, this);
    entry.idle = true;  // a drain sends GOAWAY at once; open streams still finish
    idle_since_ = accepted;
    if (env_.services.draining.load(std::memory_order_relaxed)) {
      conn_.shut_down();
    }
    on_output();  // the server's SETTINGS
    co_await read_loop(accepted);
    // The reader is done (on_output() from it): the writer sends what is left, then ends.
    while (!writer_ended()) {
      co_await wait_done();
    }
    conn_.abort_streams();
    while (spawned_ > 0) {  // their pending operations failed: they end soon
      co_await wait_done();
    }
    beast::flat_buffer scratch;
    co_await close_gracefully(stream_, scratch, read_deadline_, env_.services.clock, false);
  }

  /// A request's head is in: it is served once the bytes of this read are all taken in (spawn()
  /// after Connection::receive()), so a body that came in the same read is complete by then
  /// (Stream::settle_request_framing()).
  void on_request(http2::Stream& stream) override { arrived_.push_back(&stream); }

  void spawn(http2::Stream& stream) {
    ++spawned_;
    net::co_spawn(stream_.get_executor(), serve_stream(stream),
                  [this](const std::exception_ptr& e) {
                    if (e) {
                      env_.services.log->error("http2 stream failed");
                    }
                    if (--spawned_ == 0) {
                      done_.cancel();
                    }
                  });
  }

  /// The protocol has frames to send: the writer runs once the current handler is done
  /// (nghttp2 is not re-entered from its own callbacks).
  void on_output() override {
    if (write_scheduled_ || writing_ || writer_done_) {
      return;
    }
    write_scheduled_ = true;
    net::post(stream_.get_executor(),
              net::bind_allocator(std::pmr::polymorphic_allocator<std::byte>(env_.ops), [this] {
                write_scheduled_ = false;
                write_more();
              }));
  }

  /// Every GOAWAY sent is logged and counted, whoever decided it (docs/http2.md).
  void on_goaway_sent(std::uint32_t error_code, std::string_view reason) override {
    env_.services.log->debug("http2 goaway sent listener={} peer={} error={} reason={}",
                             peer_.listener, peer_.text, GoawayCounters::name(error_code), reason);
    if (goaways_ != nullptr) {
      goaways_->count(error_code);
    }
  }

 private:
  static void on_drain(void* self) noexcept { static_cast<H2Session*>(self)->conn_.shut_down(); }
  /// Idle for kH2IdleRelease: the frame buffer's pages go (an idle connection keeps only what
  /// it holds for the protocol's state).
  static void on_idle(void* self) noexcept {
    static_cast<H2Session*>(self)->conn_.release_idle_memory();
  }
  static void on_cut(void* self) noexcept {
    auto* session = static_cast<H2Session*>(self);
    StreamOps<S>::close(session->stream_);
    session->conn_.abort_streams();
  }

  /// Reads frames until the client or the protocol ends the connection. With no stream being
  /// served, the wait is bounded by header_timeout_ms from the accept (before the first
  /// request) or idle_timeout_ms from the last request's end; then GOAWAY.
  Task<void> read_loop(core::TimePoint accepted) {
    beast::flat_buffer buffer;  // (a stream that cannot read without a buffer while it waits)
    for (;;) {
      const bool idle = conn_.serving() == 0;
      if (idle) {
        const config::HttpConfig& http = env_.view.current()->snapshot->config().http;
        read_deadline_.arm(conn_.ever_served() ? idle_since_ + http.idle_timeout
                                               : accepted + http.header_timeout);
      } else {
        read_deadline_.disarm();  // the streams' own deadlines bound the wait
      }
      boost::system::error_code ec;
      std::string_view got;
      if constexpr (ReadsWhenReady<S>) {
        // TLS: the wait holds no buffer; what came is read into the thread's buffer and taken
        // in below before anything else runs on the thread (docs/http2.md, "Memory per
        // connection").
        const net::mutable_buffer into = read_scratch();
        typename S::Want want{};
        const std::size_t n = stream_.read_now(into, ec, want);
        if (ec == net::error::would_block) {
          std::tie(ec) = co_await stream_.async_wait_ready(want, pooled(env_.ops));
          if (!ec) {
            continue;
          }
        }
        got = std::string_view(static_cast<const char*>(into.data()), n);
      } else {
        std::size_t n = 0;
        std::tie(ec, n) = co_await stream_.async_read_some(
            buffer.prepare(idle ? kFirstRead : kH2BusyRead), pooled(env_.ops));
        buffer.commit(n);
        got = buffered(buffer);
      }
      const bool expired = read_deadline_.expired();
      read_deadline_.disarm();
      if (ec) {
        if (expired) {
          conn_.shut_down();  // GOAWAY, then the writer ends the connection
        }
        break;
      }
      const bool ok = conn_.receive(got);
      buffer.consume(buffer.size());
      for (http2::Stream* arrived : arrived_) {
        spawn(*arrived);
      }
      arrived_.clear();
      if (conn_.serving() == 0 && buffer.capacity() > kIdleBufferLimit) {
        buffer.shrink_to_fit();
      }
      on_output();
      if (!ok) {
        env_.services.log->debug("http2 connection ended peer={} reason={}", peer_.text,
                                 conn_.reason());
        break;
      }
      if (!conn_.wants_io()) {
        break;
      }
    }
    reading_ = false;
    on_output();
  }

  /// The writer: sends what the protocol has to send, each write within idle_timeout_ms (a
  /// client that stops reading is cut); ends when the reader did and all is sent, or the
  /// protocol is done. Not a coroutine: between writes it holds no operation, no frame and no
  /// timer (docs/http2.md, "Memory per connection").
  void write_more() {
    while (!writing_ && !writer_done_) {
      batch_.clear();
      conn_.send(batch_, kH2WriteBatch);
      if (batch_.empty()) {
        if (!reading_ || !conn_.wants_io()) {
          end_writer();
        } else if (conn_.serving() == 0) {  // idle from here: re-armed by every idle wait
          idle_release_.arm(env_.services.clock.now() + kH2IdleRelease);
          if (batch_.capacity() > kIdleBufferLimit) {
            batch_ = std::string();
          }
        }
        return;
      }
      const WriteStart w = write_now(stream_, net::buffer(batch_));
      if (w.ec) {
        end_writer();
        return;
      }
      if (!w.done) {
        writing_ = true;
        write_deadline_.arm(env_.services.clock.now() +
                            env_.view.current()->snapshot->config().http.idle_timeout);
        net::async_write(
            stream_, net::buffer(batch_.data() + w.written, batch_.size() - w.written),
            net::bind_allocator(std::pmr::polymorphic_allocator<std::byte>(env_.ops),
                                [this](boost::system::error_code ec, std::size_t /*n*/) {
                                  writing_ = false;
                                  write_deadline_.disarm();
                                  if (ec) {
                                    end_writer();
                                    return;
                                  }
                                  write_more();
                                }));
      }
    }
  }

  void end_writer() {
    writer_done_ = true;
    if (reading_) {
      StreamOps<S>::cancel(stream_);  // the reader waits on the socket: nothing more to read
    }
    done_.cancel();
  }

  /// No write is out or about to start, and none will.
  [[nodiscard]] bool writer_ended() const noexcept {
    return writer_done_ && !writing_ && !write_scheduled_;
  }

  /// Waits until done_ is cancelled (the writer ended, a stream finished).
  auto wait_done() {
    done_.expires_at(Timer::time_point::max());
    return done_.async_wait(kAsTuple);
  }

  /// One stream's request (serve_h2_stream()), then the connection's idle bookkeeping.
  Task<void> serve_stream(http2::Stream& stream) {
    co_await serve_h2_stream(stream, peer_, env_, up_);
    stream.served();
    if (conn_.serving() == 0) {
      // The reader may be waiting since before the streams began, without a deadline: from now
      // the connection is idle, and idle_timeout_ms bounds that wait too.
      idle_since_ = env_.services.clock.now();
      read_deadline_.arm(idle_since_ + env_.view.current()->snapshot->config().http.idle_timeout);
    }
  }

  S& stream_;
  const Peer& peer_;
  const GoawayCounters* goaways_;
  SessionEnv& env_;
  UpstreamContext<Up>& up_;
  http2::Connection conn_;
  Timer done_;  ///< the end waits on it for the writer and the stream coroutines
  Deadline read_deadline_;
  Deadline write_deadline_;
  Deadline idle_release_;  ///< fires after kH2IdleRelease of idleness: release_idle_memory()
  std::size_t spawned_ = 0;
  std::vector<http2::Stream*>
      arrived_;        ///< heads taken in by the current receive(), not served yet
  std::string batch_;  ///< the frames of the write going out
  bool reading_ = true;
  bool writing_ = false;          ///< a write is out
  bool write_scheduled_ = false;  ///< write_more() is posted
  bool writer_done_ = false;      ///< the writer has ended
  core::TimePoint idle_since_;
};

}  // namespace sluice::proxy::detail

namespace sluice::proxy {

/// Serves an HTTP/2 connection (docs/http2.md) on `stream` (after the TLS handshake chose h2,
/// or a plain connection began with the HTTP/2 preface, still unread). The caller owns `stream`
/// and `peer` and keeps them until the task is done (run_tls_session() passes its own: no copy
/// of them in this frame for the connection's life). Runs on the worker's thread; never throws.
template <typename S, typename Up>
Task<void> serve_h2_connection(S& stream, const Peer& peer, http2::Settings settings,
                               SessionEnv& env, UpstreamContext<Up>& up, core::TimePoint accepted,
                               const GoawayCounters* goaways = nullptr) {
  settings.max_header_bytes =
      static_cast<std::uint32_t>(env.view.current()->snapshot->config().http.max_header_bytes);
  detail::H2Session<S, Up> session(stream, peer, settings, env, up, goaways);
  co_await session.run(accepted);
}

/// serve_h2_connection() owning the stream, the peer and `slot`.
template <typename S, typename Up>
Task<void> run_h2_session(S stream, Peer peer, http2::Settings settings, SessionEnv& env,
                          UpstreamContext<Up>& up, ConnectionSlot slot, core::TimePoint accepted,
                          const GoawayCounters* goaways = nullptr) {
  co_await serve_h2_connection(stream, peer, settings, env, up, accepted, goaways);
  (void)slot;
}

}  // namespace sluice::proxy
