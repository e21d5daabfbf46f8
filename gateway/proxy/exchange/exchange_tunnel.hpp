// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step, part 6 of 6: an upgrade the upstream accepted (`101`) turns both
// connections into a byte tunnel (docs/upgrades.md). Read exchange.hpp first.

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstdint>
#include <string_view>

#include "gateway/http1/head_rewrite.hpp"
#include "gateway/proxy/exchange/exchange_response.hpp"
#include "gateway/proxy/steps/record_step.hpp"

namespace sluice::proxy {
namespace detail {

/// A tunnel read asks for this much at first, doubling while reads fill it, up to the most: an
/// idle tunnel keeps small buffers, a busy one moves large messages in few system calls.
inline constexpr std::size_t kTunnelReadMin = 1024;
inline constexpr std::size_t kTunnelReadMax = std::size_t{64} * 1024;

/// What one direction of a tunnel moved, and why it stopped.
struct TunnelHalf {
  std::uint64_t bytes = 0;
  boost::system::error_code error;
};

/// The state both directions of one tunnel share, in the tunnel's coroutine frame: the idle
/// deadline (`http.tunnel_idle_timeout_ms` since the last byte either way) and the stop flag.
/// Confined to the worker's thread.
template <typename Down, typename Up>
struct Tunnel {
  Tunnel(Exchange<Down, Up>& exchange, core::Duration timeout)
      : x(exchange), idle(exchange.up.sweep, &expire, this), idle_timeout(timeout) {}
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  /// Ends both directions: their pending operations fail, and neither starts another.
  void stop() noexcept {
    stopped = true;
    StreamOps<Down>::cancel(x.down.stream);
    StreamOps<Up>::cancel(x.conn->stream);
  }
  void touch() noexcept { idle.arm(x.up.clock.now() + idle_timeout); }
  static void expire(void* self) noexcept { static_cast<Tunnel*>(self)->stop(); }

  Exchange<Down, Up>& x;
  Deadline idle;
  core::Duration idle_timeout;
  bool stopped = false;
};

/// One direction of a tunnel: what `from` sends is written to `to` through `buffer` (which may
/// already hold bytes that arrived with the upgrade), with no parsing and no copy beyond that
/// one buffer. Ends both directions when its side closes or fails.
template <typename From, typename To, typename Down, typename Up>
Task<TunnelHalf> pump(Tunnel<Down, Up>& t, From& from, beast::flat_buffer& buffer, To& to) {
  TunnelHalf half;
  std::pmr::memory_resource* ops = t.x.up.ops;
  std::size_t want = kTunnelReadMin;
  for (;;) {
    if (buffer.size() > 0) {
      const auto data = buffer.data();
      const WriteStart w = write_now(to, data);
      boost::system::error_code ec = w.ec;
      if (!w.done) {
        ec = co_await write_rest(to, data, w.written, ops);
      }
      if (ec) {
        half.error = ec;
        break;
      }
      half.bytes += buffer.size();
      buffer.consume(buffer.size());
      t.touch();
    }
    if (t.stopped) {
      break;  // the other direction ended while this one was writing
    }
    auto [ec, n] = co_await from.async_read_some(buffer.prepare(want), pooled(ops));
    if (ec) {
      half.error = ec;
      break;
    }
    buffer.commit(n);
    t.touch();
    if (n == want && want < kTunnelReadMax) {
      want *= 2;
    }
  }
  t.stop();
  co_return half;
}

/// Whether the response head read is a `101` accepting the upgrade the request asked for
/// (parse_response_head() lets a `101` through only then).
template <typename Down, typename Up>
bool switches_protocols(const Exchange<Down, Up>& x) {
  return x.ctx.upgrade && x.ctx.response->head().status == 101;
}

/// Sends the `101` (its Upgrade field kept, `Connection: Upgrade`) with whatever tunnel bytes
/// the upstream sent right behind it, then relays bytes both ways until either side closes,
/// the tunnel idles for `http.tunnel_idle_timeout_ms`, or a drain runs out (the session is
/// closed). The request's bytes are consumed from the client's buffer; what follows them there
/// goes up first. Counted in `sluice_tunnels_active` while open; the upstream result is recorded
/// when it opens, the log line when it ends (record_step()). Never pooled afterwards: both
/// connections close.
template <typename Down, typename Up>
Task<void> tunnel(Exchange<Down, Up>& x) {
  using namespace boost::asio::experimental::awaitable_operators;  // NOLINT(google-build-using-*)
  RequestContext& ctx = x.ctx;
  const http1::ResponseHead& head = ctx.response->head();
  http1::ResponseRewrite rw;
  rw.upgrade = true;
  rw.request_id = ctx.request_id.view();
  rw.extra = ctx.extra_fields();
  ctx.down_out.clear();
  http1::write_response_head(head, rw, ctx.down_out);
  const std::string_view early = x.response_data().substr(head.size);
  ctx.down_out.add(early);
  ctx.keep_alive = false;
  ctx.outcome.upstream = UpstreamResult::kResponse;
  ctx.outcome.upstream_status = head.status;
  x.down.write_deadline.arm(x.up.clock.now() + x.client_timeout());
  const auto ec = co_await write_all(x.down.stream, ctx.down_out.buffers(), x.up.ops);
  x.down.write_deadline.disarm();
  x.conn->buffer.consume(head.size + early.size());
  if (ec) {
    x.close_upstream();  // the client went away before its 101: nothing opened
    co_return;
  }
  ctx.outcome.status = head.status;
  ctx.outcome.bytes_out = early.size();
  record_tunnel_start(ctx, x.up.clock.now());
  // The buffers the request and the response head used are larger than an idle tunnel needs:
  // empty ones are freed, and each direction's first read makes a small one
  // (docs/upgrades.md, "The tunnel").
  for (beast::flat_buffer* buffer : {&x.down.buffer, &x.conn->buffer}) {
    if (buffer->size() == 0) {
      buffer->shrink_to_fit();
    }
  }
  x.up.tunnels->fetch_add(1, std::memory_order_relaxed);
  {
    Tunnel<Down, Up> t(x, ctx.snapshot->config().http.tunnel_idle_timeout);
    t.touch();
    auto [up, down] = co_await (pump(t, x.down.stream, x.down.buffer, x.conn->stream) &&
                                pump(t, x.conn->stream, x.conn->buffer, x.down.stream));
    ctx.outcome.bytes_in += up.bytes;
    ctx.outcome.bytes_out += down.bytes;
  }
  x.up.tunnels->fetch_sub(1, std::memory_order_relaxed);
  x.down.buffer.consume(x.down.buffer.size());  // nobody is left to read it: close at once
  x.close_upstream();
}

}  // namespace detail
}  // namespace sluice::proxy
