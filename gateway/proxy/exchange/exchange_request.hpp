// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step, part 3 of 6: the request composed and sent, and how a sequential exchange
// settles or fails (with its one retry on a fresh connection). Read exchange.hpp first.

#include <boost/beast/core/string.hpp>
#include <string_view>

#include "gateway/http1/head_rewrite.hpp"
#include "gateway/proxy/exchange/exchange_tunnel.hpp"

namespace sluice::proxy {
namespace detail {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

/// The request head as the upstream gets it, in `ctx.up_out`.
template <typename Down, typename Up>
void compose_request(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  http1::RequestRewrite rw;
  rw.target = ctx.upstream_target;
  rw.replace_host = ctx.rewrite_host;
  rw.host = ctx.authority;
  rw.client_address = x.down.peer.text;
  rw.proto = x.down.peer.tls ? "https" : "http";
  rw.peer_trusted = is_trusted(x.down.peer.address, ctx.snapshot->config().http.trusted_proxies);
  rw.request_id = ctx.request_id.generated() ? ctx.request_id.view() : std::string_view{};
  rw.forwarded_host = ctx.authority;
  rw.upgrade = ctx.upgrade;
  std::array<std::string_view, 2> credentials{"Authorization"};
  if (ctx.route != nullptr && ctx.route->strip_credentials) {
    const auto& api_keys = ctx.snapshot->config().auth.api_keys;
    credentials[1] = api_keys ? std::string_view(api_keys->header) : std::string_view{};
    rw.strip = std::span<const std::string_view>(credentials.data(), api_keys ? 2 : 1);
  }
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

/// Settles both connections once the response was relayed.
template <typename Down, typename Up>
void finish(Exchange<Down, Up>& x, const RelayResult& relay, bool request_complete) {
  RequestContext& ctx = x.ctx;
  const http1::ResponseHead& head = ctx.response->head();
  const bool upstream_reusable = request_complete && relay.complete && head.keep_alive &&
                                 head.framing != http1::Framing::kUntilClose &&
                                 x.conn->buffer.size() == 0 && poolable(x.conn->stream);
  if (upstream_reusable) {
    x.up.pool.checkin(x.endpoint_ref().label, std::move(x.conn),
                      x.backend.config().max_idle_per_endpoint);
  } else {
    x.close_upstream();
  }
  ctx.outcome.bytes_out = relay.body_bytes;
  ctx.outcome.status = relay.wrote ? head.status : 0;
  ctx.outcome.upstream_status = head.status;
  if (ctx.grpc) {  // the call's status: in the trailers, or in the head of a trailers-only answer
    int grpc_status = ctx.response->grpc_status();
    for (std::size_t i = 0; grpc_status < 0 && i < head.fields.size(); ++i) {
      grpc_status = http1::grpc_status_field(head.fields[i], grpc_status);
    }
    ctx.outcome.grpc_status = grpc_status;
  }
  if (!relay.read_error || relay.read_error == net::error::operation_aborted) {
    // (aborted: the client failed and the exchange stopped reading; not the upstream's doing)
    ctx.outcome.upstream = UpstreamResult::kResponse;
  } else {
    ctx.outcome.upstream = relay.read_error == beast::error::timeout ? UpstreamResult::kTimeout
                                                                     : UpstreamResult::kReset;
  }
  ctx.outcome.answer_complete = request_complete && relay.complete && ctx.keep_alive;
}

template <typename Down, typename Up>
bool retry_on_fresh_connection(const Exchange<Down, Up>& x, bool write_failed,
                               boost::system::error_code ec) {
  const bool nothing_received =
      !x.ctx.response || (!x.ctx.response->got_some() && x.conn->buffer.size() == 0);
  return x.reused && nothing_received && ec != beast::error::timeout &&
         (x.idempotent || write_failed);
}

/// After a sequential exchange's request or response head failed: the one retry on a fresh
/// connection that a stale pooled one gets. Returns the gateway error to answer with (nothing
/// was written to the client, and the request's bytes are still in its buffer, so the caller
/// may retry elsewhere first), or nullopt when the fresh connection answered.
template <typename Down, typename Up>
Task<std::optional<GatewayError>> sequential_failed(Exchange<Down, Up>& x, std::size_t parsed,
                                                    bool write_failed,
                                                    boost::system::error_code ec) {
  RequestContext& ctx = x.ctx;
  if (retry_on_fresh_connection(x, write_failed, ec)) {
    x.close_upstream();
    ctx.response.reset();
    if (co_await connect(x)) {
      co_return GatewayError::kUpstreamConnect;
    }
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
      if (switches_protocols(x)) {
        co_await tunnel(x);
        co_return std::nullopt;
      }
      const RelayResult relay = co_await respond(x);
      if (!relay.wrote && relay.read_error && !relay.write_error) {
        co_await fail(x, GatewayError::kUpstreamReset);
      } else {
        finish(x, relay, true);
      }
      co_return std::nullopt;
    }
  }
  const bool timed_out = ec == beast::error::timeout || x.up_write.expired();
  co_return timed_out ? GatewayError::kUpstreamTimeout : GatewayError::kUpstreamReset;
}

}  // namespace detail
}  // namespace sluice::proxy
