// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core/string.hpp>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gateway/core/clock.hpp"
#include "gateway/http1/head_rewrite.hpp"
#include "gateway/proxy/balancer.hpp"
#include "gateway/proxy/deadline.hpp"
#include "gateway/proxy/identity.hpp"
#include "gateway/proxy/keep_alive.hpp"
#include "gateway/proxy/relay.hpp"
#include "gateway/proxy/reply.hpp"
#include "gateway/proxy/request_context.hpp"
#include "gateway/proxy/steps/identify_step.hpp"
#include "gateway/proxy/upstream_pool.hpp"

namespace sluice::proxy {

/// The client side of an exchange: the session's stream, its read buffer (holding the request
/// head at [0, head size) and whatever followed) and its two deadlines.
template <typename Stream>
struct Downstream {
  Stream& stream;
  beast::flat_buffer& buffer;
  Deadline& read_deadline;
  Deadline& write_deadline;
  const Peer& peer;
};

/// What the exchange needs of its worker: the upstream side. No Worker: a test builds one from
/// an in-memory connector. References outlive the exchange; confined to the worker's thread.
template <typename Stream>
struct UpstreamContext {
  UpstreamPool<Stream>& pool;
  Connector<Stream>& connector;
  BalanceCursor& cursor;
  DeadlineSweep& sweep;
  const core::Clock& clock;
  const std::atomic<bool>& draining;
};

/// The largest upstream response head accepted (a larger one is a 502).
inline constexpr std::uint32_t kMaxResponseHead = 16 * 1024;

namespace detail {

using namespace boost::asio::experimental::awaitable_operators;  // NOLINT(google-build-using-*)

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::size_t kHeadRead = 4096;

/// The exchange's own state, in its coroutine frame (a stable address for its deadlines).
template <typename Down, typename Up>
struct Exchange {
  Exchange(RequestContext& c, Downstream<Down> d, UpstreamContext<Up>& u)
      : ctx(c),
        down(d),
        up(u),
        backend(*c.backend),
        up_read(u.sweep, &expire, this),
        up_write(u.sweep, &expire, this),
        client_version(c.head().version),
        head_request(c.head().verb == boost::beast::http::verb::head),
        idempotent(is_idempotent(c.head().verb)) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  static void expire(void* self) noexcept {
    auto* x = static_cast<Exchange*>(self);
    if (x->conn) {
      StreamOps<Up>::cancel(x->conn->stream);
    }
  }
  static bool is_idempotent(boost::beast::http::verb v) noexcept {
    using boost::beast::http::verb;
    return v == verb::get || v == verb::head || v == verb::put || v == verb::delete_ ||
           v == verb::options || v == verb::trace;
  }
  void close_upstream() {
    if (conn) {
      StreamOps<Up>::close(conn->stream);
      conn.reset();
    }
  }
  [[nodiscard]] core::Duration timeout() const { return backend.config().timeout; }
  [[nodiscard]] core::Duration client_timeout() const {
    return ctx.snapshot->config().http.idle_timeout;
  }
  [[nodiscard]] std::string_view response_data() const {
    return {static_cast<const char*>(conn->buffer.data().data()), conn->buffer.size()};
  }

  RequestContext& ctx;
  Downstream<Down> down;
  UpstreamContext<Up>& up;
  const Backend& backend;
  ConnectionPtr<Up> conn;
  bool reused = false;
  std::size_t endpoint = 0;
  Deadline up_read;
  Deadline up_write;
  const unsigned client_version;
  const bool head_request;
  const bool idempotent;
  std::optional<Balancer::InFlight> in_flight;
  // duplex mode
  bool request_done = false;
  bool request_failed = false;  ///< the client side failed: no response will be waited for
  bool response_done = false;
  bool head_received = false;
};

inline UpstreamResult result_of(GatewayError error) noexcept {
  switch (error) {
    case GatewayError::kUpstreamConnect:
      return UpstreamResult::kConnectError;
    case GatewayError::kUpstreamTimeout:
      return UpstreamResult::kTimeout;
    case GatewayError::kUpstreamReset:
      return UpstreamResult::kReset;
    default:
      return UpstreamResult::kNotSent;  // the client's request was at fault (400, 413)
  }
}

/// Answers the client with a gateway error when nothing of a response has reached it yet.
template <typename Down, typename Up>
Task<void> fail(Exchange<Down, Up>& x, GatewayError error) {
  RequestContext& ctx = x.ctx;
  x.close_upstream();
  ctx.outcome.upstream = result_of(error);
  ctx.error = error;
  ctx.keep_alive =
      decide_keep_alive(ctx, {.draining = x.up.draining.load(std::memory_order_relaxed),
                              .request_read = ctx.parser->is_done(),
                              .closes_itself = false});
  compose_reply(ctx, x.client_version, x.head_request);
  x.down.write_deadline.arm(x.up.clock.now() + x.client_timeout());
  const auto ec = co_await write_all(x.down.stream, ctx.down_out.buffers());
  x.down.write_deadline.disarm();
  if (ec) {
    ctx.outcome.status = 0;
    ctx.outcome.bytes_out = 0;
  }
  ctx.outcome.answer_complete = !ec;
}

/// A pooled connection to `x.endpoint`, or a new one.
template <typename Down, typename Up>
Task<boost::system::error_code> acquire(Exchange<Down, Up>& x) {
  const UpstreamEndpoint& endpoint = x.backend.endpoints()[x.endpoint];
  if (auto pooled = x.up.pool.checkout(endpoint.label)) {
    x.conn = std::move(pooled);
    x.reused = true;
    co_return boost::system::error_code{};
  }
  auto connected = co_await x.up.connector.connect(endpoint, x.backend.config().connect_timeout);
  x.conn = std::move(connected.connection);
  x.reused = false;
  co_return connected.error;
}

/// Reads the response head into `ctx.response`, skipping interim 1xx responses. The caller
/// arms `x.up_read` (or, in duplex mode, the request pump does once the request is out).
template <typename Down, typename Up>
Task<boost::system::error_code> read_response_head(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  for (;;) {
    ctx.response.emplace();
    http1::ResponseParser& rp = *ctx.response;
    rp.header_limit(kMaxResponseHead);
    rp.body_limit(boost::none);
    rp.skip(x.head_request);
    std::size_t scanned = 0;
    std::size_t end = 0;
    while ((end = http1::find_head_end(x.response_data(), scanned)) == 0) {
      if (x.conn->buffer.size() >= kMaxResponseHead) {
        co_return boost::beast::http::error::header_limit;
      }
      auto [ec, n] =
          co_await x.conn->stream.async_read_some(x.conn->buffer.prepare(kHeadRead), kAsTuple);
      if (ec) {
        co_return x.up_read.expired() ? boost::system::error_code(beast::error::timeout) : ec;
      }
      x.conn->buffer.commit(n);
    }
    boost::system::error_code ec;
    const std::size_t used = rp.put(x.response_data().substr(0, end), ec);
    if (ec) {
      co_return ec;
    }
    const unsigned status = rp.head().status;
    if (status == 101) {
      co_return boost::beast::http::error::bad_status;  // no upgrade was forwarded
    }
    if (status >= 200) {
      co_return boost::system::error_code{};
    }
    x.conn->buffer.consume(used);  // an interim response: skipped
  }
}

/// Composes the client's response head from the upstream's and relays the body.
template <typename Down, typename Up>
Task<RelayResult> respond(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  const http1::ResponseHead& head = ctx.response->head();
  http1::ResponseRewrite rw;
  rw.version = x.client_version == 10 ? 10 : 11;
  bool chunked = false;
  bool closes_itself = false;
  switch (head.framing) {
    case http1::Framing::kChunked:
      if (rw.version == 10) {  // HTTP/1.0 has no chunking: delimit by closing
        rw.framing = http1::BodyFraming::kUnchunk;
        closes_itself = true;
      } else {
        chunked = true;
      }
      break;
    case http1::Framing::kUntilClose:
      if (rw.version == 10) {
        closes_itself = true;
      } else {  // keep the client connection: chunk what the upstream delimits by closing
        rw.framing = http1::BodyFraming::kChunked;
        chunked = true;
      }
      break;
    case http1::Framing::kContentLength:
    case http1::Framing::kNone:
      break;
  }
  ctx.keep_alive = decide_keep_alive(
      ctx, {.draining = x.up.draining.load(std::memory_order_relaxed),
            .request_read = true,  // an exchange that ends before the request was read closes
            .closes_itself = closes_itself});
  rw.keep_alive = ctx.keep_alive;
  rw.request_id = ctx.request_id.view();
  rw.extra = ctx.extra_fields();
  ctx.down_out.clear();
  http1::write_response_head(head, rw, ctx.down_out);
  co_return co_await relay_body(
      *ctx.response, head.size, ReadEnd<Up>{x.conn->stream, x.conn->buffer, x.up_read, x.timeout()},
      WriteEnd<Down>{x.down.stream, x.down.write_deadline, x.client_timeout()}, ctx.down_out,
      chunked, x.up.clock);
}

/// Settles both connections once the response was relayed.
template <typename Down, typename Up>
void finish(Exchange<Down, Up>& x, const RelayResult& relay, bool request_complete) {
  RequestContext& ctx = x.ctx;
  const http1::ResponseHead& head = ctx.response->head();
  const bool upstream_reusable = request_complete && relay.complete && head.keep_alive &&
                                 head.framing != http1::Framing::kUntilClose &&
                                 x.conn->buffer.size() == 0;
  if (upstream_reusable) {
    x.up.pool.checkin(x.backend.endpoints()[x.endpoint].label, std::move(x.conn),
                      x.backend.config().max_idle_per_endpoint);
  } else {
    x.close_upstream();
  }
  ctx.outcome.bytes_out = relay.body_bytes;
  ctx.outcome.status = relay.wrote ? head.status : 0;
  ctx.outcome.upstream_status = head.status;
  if (!relay.read_error || relay.read_error == net::error::operation_aborted) {
    // (aborted: the client failed and the exchange stopped reading; not the upstream's doing)
    ctx.outcome.upstream = UpstreamResult::kResponse;
  } else {
    ctx.outcome.upstream = relay.read_error == beast::error::timeout ? UpstreamResult::kTimeout
                                                                     : UpstreamResult::kReset;
  }
  ctx.outcome.answer_complete = request_complete && relay.complete && ctx.keep_alive;
}

/// A new connection to the same endpoint (the retry of a stale pooled one).
template <typename Down, typename Up>
Task<bool> acquire_fresh(Exchange<Down, Up>& x) {
  auto connected = co_await x.up.connector.connect(x.backend.endpoints()[x.endpoint],
                                                   x.backend.config().connect_timeout);
  x.conn = std::move(connected.connection);
  x.reused = false;
  if (x.conn) {
    x.conn->mark_active(x.backend.metrics());
  }
  co_return static_cast<bool>(x.conn);
}

template <typename Down, typename Up>
bool retry_on_fresh_connection(const Exchange<Down, Up>& x, bool write_failed,
                               boost::system::error_code ec) {
  const bool nothing_received =
      !x.ctx.response || (!x.ctx.response->got_some() && x.conn->buffer.size() == 0);
  return x.reused && nothing_received && ec != beast::error::timeout &&
         (x.idempotent || write_failed);
}

/// The body is absent or already buffered: send everything in one write, then read the
/// response. A reused connection found closed is retried once on a fresh one.
template <typename Down, typename Up>
Task<void> sequential(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  http1::RequestParser& parser = *ctx.parser;
  std::size_t parsed = ctx.head().size;
  boost::system::error_code ec;
  parsed = gather_body(parser, x.down.buffer, parsed, ctx.up_out, false, ctx.outcome.bytes_in, ec);
  for (int attempt = 0;; ++attempt) {
    core::TimePoint sent_at = x.up.clock.now();
    x.up_write.arm(sent_at + x.timeout());
    ec = co_await write_all(x.conn->stream, ctx.up_out.buffers());
    x.up_write.disarm();
    const bool write_failed = static_cast<bool>(ec);
    if (!ec) {
      sent_at = x.up.clock.now();
      x.up_read.arm(sent_at + x.timeout());
      ec = co_await read_response_head(x);
      x.up_read.disarm();
    }
    if (!ec) {
      x.down.buffer.consume(parsed);  // the request is out: its bytes may go
      ctx.outcome.upstream_time = x.up.clock.now() - sent_at;
      const RelayResult relay = co_await respond(x);
      if (!relay.wrote && relay.read_error && !relay.write_error) {
        co_await fail(x, GatewayError::kUpstreamReset);  // a bad body before any byte went out
        co_return;
      }
      finish(x, relay, true);
      co_return;
    }
    if (attempt == 0 && retry_on_fresh_connection(x, write_failed, ec)) {
      x.close_upstream();
      ctx.response.reset();
      if (co_await acquire_fresh(x)) {
        continue;
      }
      x.down.buffer.consume(parsed);
      co_await fail(x, GatewayError::kUpstreamConnect);
      co_return;
    }
    x.down.buffer.consume(parsed);
    const bool timed_out = ec == beast::error::timeout || x.up_write.expired();
    co_await fail(x, timed_out ? GatewayError::kUpstreamTimeout : GatewayError::kUpstreamReset);
    co_return;
  }
}

/// Duplex mode, the request half: streams the client's body up, then starts the response
/// head's deadline (timeout_ms counts from the request being out).
template <typename Down, typename Up>
Task<RelayResult> pump_request(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  const bool chunked = ctx.head().framing == http1::Framing::kChunked;
  const RelayResult r = co_await relay_body(
      *ctx.parser, ctx.head().size,
      ReadEnd<Down>{x.down.stream, x.down.buffer, x.down.read_deadline, x.client_timeout()},
      WriteEnd<Up>{x.conn->stream, x.up_write, x.timeout()}, ctx.up_out, chunked, x.up.clock);
  x.request_done = true;
  if (r.read_error && !x.response_done) {
    // The client failed: stop waiting for the upstream (the flag covers a receive that has not
    // started its read yet; the cancel one that has).
    x.request_failed = true;
    StreamOps<Up>::cancel(x.conn->stream);
  } else if (r.complete && !x.head_received) {
    x.up_read.arm(x.up.clock.now() + x.timeout());
  }
  co_return r;
}

struct Received {
  boost::system::error_code head_error;
  RelayResult relay;
};

/// Duplex mode, the response half.
template <typename Down, typename Up>
Task<Received> receive(Exchange<Down, Up>& x, core::TimePoint sent_at) {
  Received r;
  if (x.request_failed) {
    r.head_error = net::error::operation_aborted;
    x.response_done = true;
    co_return r;
  }
  r.head_error = co_await read_response_head(x);
  x.head_received = !r.head_error;
  x.up_read.disarm();
  if (r.head_error) {
    x.response_done = true;
    if (!x.request_done && x.conn) {
      StreamOps<Up>::cancel(x.conn->stream);  // the upstream failed: stop a pending write to it
    }
    co_return r;
  }
  x.ctx.outcome.upstream_time = x.up.clock.now() - sent_at;
  r.relay = co_await respond(x);
  x.response_done = true;
  if (!x.request_done) {
    StreamOps<Down>::cancel(x.down.stream);  // an early answer: stop reading the client
  }
  co_return r;
}

/// The body is still arriving: stream it up while the response streams down, so an upstream
/// that answers early (or echoes while reading) never deadlocks the exchange.
template <typename Down, typename Up>
Task<void> duplex(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  const core::TimePoint sent_at = x.up.clock.now();
  auto [pump, received] = co_await (pump_request(x) && receive(x, sent_at));
  x.up_read.disarm();
  ctx.outcome.bytes_in = pump.body_bytes;
  if (!received.head_error) {
    if (!received.relay.wrote && received.relay.read_error && !received.relay.write_error) {
      co_await fail(x, GatewayError::kUpstreamReset);
      co_return;
    }
    finish(x, received.relay, pump.complete);
    co_return;
  }
  if (const auto error = body_read_failure(pump.read_error)) {
    co_await fail(x, *error);  // 413 past max_body_bytes, 400 for bad chunking
  } else if (pump.read_error) {
    x.close_upstream();  // the client is gone (or stalled): nobody to answer
    ctx.outcome.upstream = UpstreamResult::kNotSent;
    ctx.outcome.answer_complete = false;
  } else {
    const bool timed_out = received.head_error == beast::error::timeout ||
                           pump.write_error == beast::error::timeout || x.up_read.expired();
    co_await fail(x, timed_out ? GatewayError::kUpstreamTimeout : GatewayError::kUpstreamReset);
  }
}

}  // namespace detail

/// Step 4, forward (docs/behaviour.md §4 "Upstreams"): sends the routed request in `ctx` to its
/// backend and relays the response to the client.
/// - a pooled connection, or a new one within `connect_timeout_ms`; when connecting fails, one
///   other endpoint is tried (nothing was sent), then 502 `upstream_connect_error`;
/// - the request head is the client's bytes with the hygiene edits (http1::write_request_head);
///   a bodyless or fully buffered request leaves in one write, a streaming body goes up while
///   the response comes down (duplex), so an early or echoing upstream never deadlocks;
/// - no response head within `timeout_ms` of the request being sent -> 504; a reset or close
///   before the head -> 502 `upstream_reset`; one failing mid-body cuts the client connection;
/// - a reused connection that turns out closed is retried once on a fresh connection when the
///   request is idempotent or nothing could be sent.
/// Fills `ctx.outcome` and `ctx.keep_alive`; writes every byte the client gets, a gateway
/// error included. Runs on the worker's thread; never throws.
template <typename Down, typename Up>
Task<void> exchange(RequestContext& ctx, Downstream<Down> down, UpstreamContext<Up>& up) {
  detail::Exchange<Down, Up> x(ctx, down, up);
  const Backend& backend = x.backend;
  const std::size_t endpoints = backend.endpoints().size();
  x.endpoint = backend.balancer().pick(up.cursor, endpoints);
  boost::system::error_code ec = co_await detail::acquire(x);
  if (!x.conn && endpoints > 1) {
    // Nothing was sent: another endpoint is safe to try (nginx's proxy_next_upstream error).
    x.endpoint = backend.balancer().pick(up.cursor, x.endpoint);
    ec = co_await detail::acquire(x);
  }
  ctx.outcome.endpoint = &backend.endpoints()[x.endpoint];
  if (!x.conn) {
    const std::size_t head_and_buffered = std::min(down.buffer.size(), ctx.head().size);
    down.buffer.consume(head_and_buffered);
    co_await detail::fail(x, GatewayError::kUpstreamConnect);
    co_return;
  }
  x.conn->mark_active(backend.metrics());
  x.in_flight.emplace(backend.balancer().track(x.endpoint));
  http1::RequestParser& parser = *ctx.parser;
  const http1::RequestHead& head = ctx.head();
  const std::size_t buffered = down.buffer.size() - head.size;
  if (!parser.is_done() && buffered == 0 &&
      boost::beast::iequals(head.fields.value(boost::beast::http::field::expect), "100-continue")) {
    down.write_deadline.arm(up.clock.now() + x.client_timeout());
    const auto wec = co_await write_all(
        down.stream, net::const_buffer(detail::kContinue.data(), detail::kContinue.size()));
    down.write_deadline.disarm();
    if (wec) {
      x.close_upstream();
      ctx.outcome.answer_complete = false;
      co_return;
    }
  }
  http1::RequestRewrite rw;
  rw.target = ctx.upstream_target;
  rw.client_address = down.peer.text;
  rw.peer_trusted = is_trusted(down.peer.address, ctx.snapshot->config().http.trusted_proxies);
  rw.request_id = ctx.request_id.generated() ? ctx.request_id.view() : std::string_view{};
  ctx.up_out.clear();
  http1::write_request_head(head, rw, ctx.up_out);
  const bool whole_body_here =
      parser.is_done() ||
      (head.framing == http1::Framing::kContentLength && head.content_length <= buffered);
  if (whole_body_here) {
    co_await detail::sequential(x);
  } else {
    co_await detail::duplex(x);
  }
}

}  // namespace sluice::proxy
