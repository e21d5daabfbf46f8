// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step, part 1 of 6 (docs/architecture.md, "The request path"): what an exchange
// works with, its state, and the ways it starts and fails. Read exchange.hpp first.

#include <atomic>
#include <cstdint>
#include <memory_resource>
#include <optional>
#include <string_view>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/exchange/exchange_ends.hpp"
#include "gateway/proxy/exchange/relay.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/request/keep_alive.hpp"
#include "gateway/proxy/request/reply.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/proxy/routing/balancer.hpp"
#include "gateway/proxy/steps/identify_step.hpp"
#include "gateway/proxy/steps/identity.hpp"
#include "gateway/proxy/upstream/upstream_pool.hpp"

namespace sluice::proxy {

/// The largest upstream response head accepted (a larger one is a 502).
inline constexpr std::uint32_t kMaxResponseHead = 16 * 1024;

namespace detail {

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
  ~Exchange() {
    if (retry_slot != nullptr) {
      retry_slot->end_retry();
    }
  }

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
  /// The backend's response timeout, shortened by a gRPC call's own deadline.
  [[nodiscard]] core::Duration timeout() const {
    const core::Duration route = backend.config().timeout;
    return ctx.grpc_timeout ? std::min(route, *ctx.grpc_timeout) : route;
  }
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
  /// The backend's retry budget slot this request holds while it retries (exchange_retry.hpp).
  health::EndpointHealth* retry_slot = nullptr;
  /// The part of a body kept for replay that did not arrive with the head (keep_body()).
  std::unique_ptr<char[]> kept;  // NOLINT(modernize-avoid-c-arrays): a raw block, sized once
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

/// Takes a pooled connection to the balancer's pick, or says a new one is needed. On the
/// second attempt (the first could not connect), another endpoint is picked.
template <typename Down, typename Up>
bool take_pooled(Exchange<Down, Up>& x, int attempt) {
  if (attempt == 0) {
    x.endpoint =
        x.backend.balancer().pick(x.up.cursor, x.backend.endpoints().size(), x.ctx.started);
  } else {
    // Nothing was sent: another endpoint is safe to try (nginx's proxy_next_upstream error).
    x.endpoint = x.backend.balancer().pick(x.up.cursor, x.endpoint, x.up.clock.now());
  }
  if (auto pooled = x.up.pool.checkout(x.endpoint_ref().label, x.endpoint_ref().tls.get())) {
    x.conn = std::move(pooled);
    x.reused = true;
    return true;
  }
  return false;
}

/// Connects to the picked endpoint, and when that fails, to one other (nothing was sent yet,
/// so another endpoint is safe to try), pooled or new. `x.conn` is empty when both failed.
template <typename Down, typename Up>
Task<void> connect_any(Exchange<Down, Up>& x) {
  co_await connect(x);
  if (x.conn || x.backend.endpoints().size() < 2 || take_pooled(x, 1)) {
    co_return;
  }
  co_await connect(x);
}

}  // namespace detail
}  // namespace sluice::proxy
