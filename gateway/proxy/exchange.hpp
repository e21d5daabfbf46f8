// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core/string.hpp>
#include <cstdint>
#include <memory_resource>
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

/// What the exchange needs of its worker: the upstream side, and the pool its operations take
/// memory from. No Worker: a test builds one around an in-memory connector. References outlive
/// the exchange; confined to the worker's thread.
template <typename Stream>
struct UpstreamContext {
  UpstreamPool<Stream>& pool;
  Connector<Stream>& connector;
  BalanceCursor& cursor;
  DeadlineSweep& sweep;
  const core::Clock& clock;
  const std::atomic<bool>& draining;
  std::pmr::memory_resource* ops;
};

/// The largest upstream response head accepted (a larger one is a 502).
inline constexpr std::uint32_t kMaxResponseHead = 16 * 1024;

namespace detail {

using namespace boost::asio::experimental::awaitable_operators;  // NOLINT(google-build-using-*)

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

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
  [[nodiscard]] const UpstreamEndpoint& endpoint_ref() const {
    return backend.endpoints()[endpoint];
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
  // the common (sequential) case
  std::size_t request_parsed = 0;  ///< request bytes (head and buffered body) in up_out
  core::TimePoint sent_at{};
  WriteStart sent;  ///< how the request write began
  bool request_write_failed = false;
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
  const auto ec = co_await write_all(x.down.stream, ctx.down_out.buffers(), x.up.ops);
  x.down.write_deadline.disarm();
  if (ec) {
    ctx.outcome.status = 0;
    ctx.outcome.bytes_out = 0;
  }
  ctx.outcome.answer_complete = !ec;
}

/// A new connection to the current endpoint.
template <typename Down, typename Up>
Task<boost::system::error_code> connect(Exchange<Down, Up>& x) {
  auto connected =
      co_await x.up.connector.connect(x.endpoint_ref(), x.backend.config().connect_timeout);
  x.conn = std::move(connected.connection);
  x.reused = false;
  co_return connected.error;
}

/// Starts reading a response head: the parser for it, in `ctx.response`.
template <typename Down, typename Up>
http1::ResponseParser& new_response(Exchange<Down, Up>& x) {
  x.ctx.response.emplace();
  http1::ResponseParser& rp = *x.ctx.response;
  rp.header_limit(kMaxResponseHead);
  rp.body_limit(boost::none);
  rp.skip(x.head_request);
  return rp;
}

/// Parses the head that ends at `end` of the connection's buffer. Returns whether it is final
/// (not an interim 1xx, which is consumed and skipped).
template <typename Down, typename Up>
bool parse_response_head(Exchange<Down, Up>& x, std::size_t end, boost::system::error_code& ec) {
  http1::ResponseParser& rp = *x.ctx.response;
  const std::size_t used = rp.put(x.response_data().substr(0, end), ec);
  if (ec) {
    return true;
  }
  const unsigned status = rp.head().status;
  if (status == 101) {
    ec = boost::beast::http::error::bad_status;  // no upgrade was forwarded
    return true;
  }
  if (status >= 200) {
    return true;
  }
  x.conn->buffer.consume(used);  // an interim response: skipped
  new_response(x);
  return false;
}

/// Reads the response head into `ctx.response`, skipping interim 1xx responses. The caller
/// arms `x.up_read` (in duplex mode, the request pump does once the request is out).
template <typename Down, typename Up>
Task<boost::system::error_code> read_response_head(Exchange<Down, Up>& x) {
  new_response(x);
  std::size_t scanned = 0;
  for (;;) {
    if (const std::size_t end = http1::find_head_end(x.response_data(), scanned); end != 0) {
      boost::system::error_code ec;
      if (parse_response_head(x, end, ec)) {
        co_return ec;
      }
      scanned = 0;
      continue;
    }
    if (x.conn->buffer.size() >= kMaxResponseHead) {
      co_return boost::beast::http::error::header_limit;
    }
    // The connection's watching read (pending since it was pooled or connected) receives the
    // first bytes; async_receive() starts a further one the same way.
    auto [ec, n] = co_await x.conn->async_receive(pooled(x.up.ops));
    if (ec) {
      co_return x.up_read.expired() ? boost::system::error_code(beast::error::timeout) : ec;
    }
  }
}

/// Composes the client's response head from the upstream's into `ctx.down_out`, with the body
/// bytes already here. Returns whether the body is chunked toward the client.
template <typename Down, typename Up>
bool compose_response(Exchange<Down, Up>& x, std::uint64_t& gathered,
                      boost::system::error_code& ec) {
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
  ctx.response_parsed =
      gather_body(*ctx.response, x.conn->buffer, head.size, ctx.down_out, chunked, gathered, ec);
  return chunked;
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
    x.up.pool.checkin(x.endpoint_ref().label, std::move(x.conn),
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

/// Sends the composed response and relays the rest of its body. In the common case (the whole
/// body is already here) this is one write, tried at once: no coroutine of its own.
template <typename Down, typename Up>
Task<RelayResult> respond(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  std::uint64_t gathered = 0;
  boost::system::error_code ec;
  const bool chunked = compose_response(x, gathered, ec);
  RelayResult r;
  if (ec) {
    r.read_error = ec;
    co_return r;
  }
  r = co_await relay_body(*ctx.response, ctx.response_parsed,
                          ReadEnd<Up>{x.conn->stream, x.conn->buffer, x.up_read, x.timeout()},
                          WriteEnd<Down>{x.down.stream, x.down.write_deadline, x.client_timeout()},
                          ctx.down_out, chunked, x.up.clock, x.up.ops);
  r.body_bytes += r.wrote ? gathered : 0;  // what compose_response() gathered went first
  co_return r;
}

template <typename Down, typename Up>
bool retry_on_fresh_connection(const Exchange<Down, Up>& x, bool write_failed,
                               boost::system::error_code ec) {
  const bool nothing_received =
      !x.ctx.response || (!x.ctx.response->got_some() && x.conn->buffer.size() == 0);
  return x.reused && nothing_received && ec != beast::error::timeout &&
         (x.idempotent || write_failed);
}

/// The error of a sequential exchange whose request or response head failed, after the one
/// retry on a fresh connection that a stale pooled one gets.
template <typename Down, typename Up>
Task<void> sequential_failed(Exchange<Down, Up>& x, std::size_t parsed, bool write_failed,
                             boost::system::error_code ec) {
  RequestContext& ctx = x.ctx;
  if (retry_on_fresh_connection(x, write_failed, ec)) {
    x.close_upstream();
    ctx.response.reset();
    if (!co_await connect(x)) {
      x.conn->mark_active(x.backend.metrics());
      core::TimePoint sent_at = x.up.clock.now();
      x.up_write.arm(sent_at + x.timeout());
      ec = co_await write_all(x.conn->stream, ctx.up_out.buffers(), x.up.ops);
      x.up_write.disarm();
      if (!ec) {
        sent_at = x.up.clock.now();
        x.up_read.arm(sent_at + x.timeout());
        ec = co_await read_response_head(x);
        x.up_read.disarm();
      }
      if (!ec) {
        x.down.buffer.consume(parsed);
        ctx.outcome.upstream_time = x.up.clock.now() - sent_at;
        const RelayResult relay = co_await respond(x);
        if (!relay.wrote && relay.read_error && !relay.write_error) {
          co_await fail(x, GatewayError::kUpstreamReset);
        } else {
          finish(x, relay, true);
        }
        co_return;
      }
    } else {
      x.down.buffer.consume(parsed);
      co_await fail(x, GatewayError::kUpstreamConnect);
      co_return;
    }
  }
  x.down.buffer.consume(parsed);
  const bool timed_out = ec == beast::error::timeout || x.up_write.expired();
  co_await fail(x, timed_out ? GatewayError::kUpstreamTimeout : GatewayError::kUpstreamReset);
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
      WriteEnd<Up>{x.conn->stream, x.up_write, x.timeout()}, ctx.up_out, chunked, x.up.clock,
      x.up.ops);
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

/// The request head as the upstream gets it, in `ctx.up_out`.
template <typename Down, typename Up>
void compose_request(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  http1::RequestRewrite rw;
  rw.target = ctx.upstream_target;
  rw.client_address = x.down.peer.text;
  rw.peer_trusted = is_trusted(x.down.peer.address, ctx.snapshot->config().http.trusted_proxies);
  rw.request_id = ctx.request_id.generated() ? ctx.request_id.view() : std::string_view{};
  ctx.up_out.clear();
  http1::write_request_head(ctx.head(), rw, ctx.up_out);
}

/// Answers `Expect: 100-continue` once the upstream connection is ready. False when the client
/// cannot be written to.
template <typename Down, typename Up>
Task<bool> send_continue(Exchange<Down, Up>& x) {
  x.down.write_deadline.arm(x.up.clock.now() + x.client_timeout());
  const auto ec = co_await write_all(
      x.down.stream, net::const_buffer(kContinue.data(), kContinue.size()), x.up.ops);
  x.down.write_deadline.disarm();
  co_return !ec;
}

/// The part of a response write that could not leave at once, or a body still arriving.
template <typename Down, typename Up>
Task<RelayResult> respond_rest(Exchange<Down, Up>& x, WriteStart started, bool chunked,
                               std::uint64_t gathered) {
  RequestContext& ctx = x.ctx;
  RelayResult relay;
  if (ctx.response->is_done()) {  // only the write was left
    x.down.write_deadline.arm(x.up.clock.now() + x.client_timeout());
    const auto ec =
        co_await write_rest(x.down.stream, ctx.down_out.buffers(), started.written, x.up.ops);
    x.down.write_deadline.disarm();
    relay.wrote = !ec;
    relay.write_error = ec;
    relay.complete = !ec;
    relay.body_bytes = ec ? 0 : gathered;
    x.conn->buffer.consume(ctx.response_parsed);
    co_return relay;
  }
  relay =
      co_await relay_body(*ctx.response, ctx.response_parsed,
                          ReadEnd<Up>{x.conn->stream, x.conn->buffer, x.up_read, x.timeout()},
                          WriteEnd<Down>{x.down.stream, x.down.write_deadline, x.client_timeout()},
                          ctx.down_out, chunked, x.up.clock, x.up.ops);
  relay.body_bytes += relay.wrote ? gathered : 0;
  co_return relay;
}

/// The rest of a request write that could not leave at once. Returns when it was sent.
template <typename Down, typename Up>
Task<boost::system::error_code> send_rest(Exchange<Down, Up>& x, std::size_t written,
                                          core::TimePoint& sent_at) {
  x.up_write.arm(sent_at + x.timeout());
  const auto ec = co_await write_rest(x.conn->stream, x.ctx.up_out.buffers(), written, x.up.ops);
  x.up_write.disarm();
  sent_at = x.up.clock.now();
  co_return ec;
}

/// Takes a pooled connection to the balancer's pick, or says a new one is needed. On the
/// second attempt (the first could not connect), another endpoint is picked.
template <typename Down, typename Up>
bool take_pooled(Exchange<Down, Up>& x, int attempt) {
  if (attempt == 0) {
    x.endpoint = x.backend.balancer().pick(x.up.cursor, x.backend.endpoints().size());
  } else {
    // Nothing was sent: another endpoint is safe to try (nginx's proxy_next_upstream error).
    x.endpoint = x.backend.balancer().pick(x.up.cursor, x.endpoint);
  }
  if (auto pooled = x.up.pool.checkout(x.endpoint_ref().label)) {
    x.conn = std::move(pooled);
    x.reused = true;
    return true;
  }
  return false;
}

/// Whether the client waits for `100 Continue` before sending its body.
template <typename Down, typename Up>
bool expects_continue(const Exchange<Down, Up>& x) {
  const http1::RequestHead& head = x.ctx.head();
  return !x.ctx.parser->is_done() && x.down.buffer.size() == head.size &&
         boost::beast::iequals(head.fields.value(boost::beast::http::field::expect),
                               "100-continue");
}

/// Whether the body must stream (duplex) rather than leave with the head.
template <typename Down, typename Up>
bool body_streams(const Exchange<Down, Up>& x) {
  const http1::RequestHead& head = x.ctx.head();
  return !x.ctx.parser->is_done() && !(head.framing == http1::Framing::kContentLength &&
                                       head.content_length <= x.down.buffer.size() - head.size);
}

/// Sends the request (head and buffered body) as far as it goes at once. True when all of it
/// went (or the write failed at once).
template <typename Down, typename Up>
bool send_request_now(Exchange<Down, Up>& x, boost::system::error_code& ec) {
  RequestContext& ctx = x.ctx;
  x.request_parsed = gather_body(*ctx.parser, x.down.buffer, ctx.head().size, ctx.up_out, false,
                                 ctx.outcome.bytes_in, ec);
  x.sent_at = x.up.clock.now();
  x.sent = write_now(x.conn->stream, ctx.up_out.buffers());
  x.request_write_failed = static_cast<bool>(x.sent.ec);
  ec = x.sent.ec;
  return x.sent.done;
}

/// Composes the response and writes it at once when its whole body is here. The result, or
/// nullopt when the rest must be awaited (respond_rest()).
template <typename Down, typename Up>
std::optional<RelayResult> respond_now(Exchange<Down, Up>& x, bool& chunked,
                                       std::uint64_t& gathered) {
  RequestContext& ctx = x.ctx;
  x.down.buffer.consume(x.request_parsed);  // the request is out: its bytes may go
  ctx.outcome.upstream_time = x.up.clock.now() - x.sent_at;
  boost::system::error_code ec;
  chunked = compose_response(x, gathered, ec);
  RelayResult relay;
  if (ec) {
    relay.read_error = ec;
    return relay;
  }
  if (!ctx.response->is_done()) {
    x.sent = WriteStart{};
    return std::nullopt;
  }
  x.sent = write_now(x.down.stream, ctx.down_out.buffers());
  if (!x.sent.done) {
    return std::nullopt;
  }
  relay.wrote = !x.sent.ec;
  relay.write_error = x.sent.ec;
  relay.complete = !x.sent.ec;
  relay.body_bytes = x.sent.ec ? 0 : gathered;
  x.conn->buffer.consume(ctx.response_parsed);
  return relay;
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
/// error included. The common case (a pooled connection, a small request and response) runs in
/// this one coroutine: its helpers are plain functions until something must wait longer.
/// Runs on the worker's thread; never throws.
template <typename Down, typename Up>
Task<void> exchange(RequestContext& ctx, Downstream<Down> down, UpstreamContext<Up>& up) {
  // The common case (a pooled connection, a small request and response) suspends only for the
  // response head; the helpers are plain functions, so this frame stays small enough for Asio
  // to recycle it (docs/architecture.md, "Memory").
  detail::Exchange<Down, Up> x(ctx, down, up);
  for (int attempt = 0; attempt < 2 && !x.conn; ++attempt) {
    if (attempt == 1 && x.backend.endpoints().size() < 2) {
      break;
    }
    if (!detail::take_pooled(x, attempt)) {
      co_await detail::connect(x);
    }
  }
  ctx.outcome.endpoint = &x.endpoint_ref();
  if (!x.conn) {
    down.buffer.consume(ctx.head().size);
    co_await detail::fail(x, GatewayError::kUpstreamConnect);
    co_return;
  }
  x.conn->mark_active(x.backend.metrics());
  x.in_flight.emplace(x.backend.balancer().track(x.endpoint));
  if (detail::expects_continue(x) && !co_await detail::send_continue(x)) {
    x.close_upstream();
    ctx.outcome.answer_complete = false;
    co_return;
  }
  detail::compose_request(x);
  if (detail::body_streams(x)) {
    co_await detail::duplex(x);
    co_return;
  }
  // The body is absent or already buffered: everything in one write, then the response.
  boost::system::error_code ec;
  if (!detail::send_request_now(x, ec)) {
    ec = co_await detail::send_rest(x, x.sent.written, x.sent_at);
  }
  if (!ec) {
    x.up_read.arm(x.sent_at + x.timeout());
    detail::new_response(x);
    std::size_t scanned = 0;
    for (;;) {  // the response head (as read_response_head(), without a frame of its own)
      if (const std::size_t end = http1::find_head_end(x.response_data(), scanned); end != 0) {
        if (detail::parse_response_head(x, end, ec)) {
          break;
        }
        scanned = 0;
        continue;
      }
      if (x.conn->buffer.size() >= kMaxResponseHead) {
        ec = boost::beast::http::error::header_limit;
        break;
      }
      // The watching read, pending since the connection was pooled: no system call of its own.
      auto [rec, n] = co_await x.conn->async_receive(pooled(up.ops));
      if (rec) {
        ec = x.up_read.expired() ? boost::system::error_code(beast::error::timeout) : rec;
        break;
      }
    }
    x.up_read.disarm();
  }
  if (ec) {
    co_await detail::sequential_failed(x, x.request_parsed, x.request_write_failed, ec);
    co_return;
  }
  bool chunked = false;
  std::uint64_t gathered = 0;
  std::optional<RelayResult> relay = detail::respond_now(x, chunked, gathered);
  if (!relay) {
    relay = co_await detail::respond_rest(x, x.sent, chunked, gathered);
  }
  if (!relay->wrote && relay->read_error && !relay->write_error) {
    co_await detail::fail(x, GatewayError::kUpstreamReset);  // a bad body before any byte went
    co_return;
  }
  detail::finish(x, *relay, true);
}

}  // namespace sluice::proxy
