// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>

#include "gateway/proxy/exchange/exchange.hpp"
#include "gateway/proxy/session/connection_gate.hpp"
#include "gateway/proxy/session/request_intake.hpp"
#include "gateway/proxy/session/session_env.hpp"
#include "gateway/proxy/session/session_io.hpp"
#include "gateway/proxy/steps/limit_step.hpp"
#include "gateway/proxy/steps/record_step.hpp"

namespace sluice::proxy {
namespace detail {

/// How a request left the connection.
struct Served {
  bool keep_open = false;
  bool linger = false;  ///< the client may still be sending: drain it before closing
};

/// Answers `error` itself (prepare_answer()), then writes the answer.
template <typename Stream>
Task<Served> answer(RequestContext& ctx, Stream& stream, beast::flat_buffer& buffer,
                    Deadline& write_deadline, const SessionEnv& env, GatewayError error) {
  const bool request_read = prepare_answer(ctx, buffer, env, error);
  write_deadline.arm(env.services.clock.now() + ctx.snapshot->config().http.idle_timeout);
  const auto ec = co_await write_all(stream, ctx.down_out.buffers(), env.ops);
  write_deadline.disarm();
  if (ec) {
    ctx.outcome.status = 0;
    ctx.outcome.bytes_out = 0;
  }
  ctx.outcome.answer_complete = !ec;
  co_return Served{!ec && ctx.keep_alive, !request_read};
}

/// How the connection goes on after an exchange. Linger only when the client may still be
/// sending (an unread body or pipelined requests): after a complete request, closing at once
/// cannot reset our response.
inline Served after_exchange(const RequestContext& ctx, const beast::flat_buffer& buffer) {
  const bool keep = ctx.outcome.answer_complete && ctx.keep_alive;
  return {keep, !keep && (!ctx.parser->is_done() || buffer.size() > 0)};
}

/// An empty read buffer between requests: a large one is freed (an idle connection keeps only
/// a small one). Returns the current http settings for the wait.
inline const config::HttpConfig& idle_buffer(beast::flat_buffer& buffer, const SessionEnv& env) {
  if (buffer.capacity() > kIdleBufferLimit) {
    buffer.shrink_to_fit();
  }
  return env.view.current()->snapshot->config().http;
}

}  // namespace detail

/// Serves one client connection until it closes (docs/behaviour.md "Keep-alive"):
/// keep-alive and pipelining (requests answered in order); the first head within
/// `header_timeout_ms` (408 then close), the wait for a next request bounded by
/// `idle_timeout_ms`; oversized heads 431, bodies 413, malformed requests 400 (all closing).
/// One request, from its head to its log line, runs in this coroutine (docs/architecture.md,
/// "The request path"): the steps are plain functions, and only the exchange, an incomplete
/// head, a store that must be awaited or a gateway answer add a frame of their own. The
/// coroutine owns the stream and `slot`, runs on the worker's thread and never throws. A
/// template over the client's and the upstream's stream types (docs/architecture.md, "Streams").
///
/// `accepted` is when the connection was accepted (the first head's header_timeout_ms counts
/// from it; a TLS handshake before the session spends from the same budget); unset: now.
template <typename Down, typename Up>
Task<void> run_session(Down stream, Peer peer, SessionEnv& env, UpstreamContext<Up>& up,
                       ConnectionSlot slot, std::optional<core::TimePoint> accepted_at = {}) {
  const core::Clock& clock = env.services.clock;
  beast::flat_buffer buffer;
  Deadline read_deadline(env.sweep, &detail::cancel_stream<Down>, &stream);
  Deadline write_deadline(env.sweep, &detail::cancel_stream<Down>, &stream);
  SessionEntry entry(env.sessions, &detail::cancel_stream<Down>, &detail::close_stream<Down>,
                     &stream);
  const Downstream<Down> down{stream, buffer, read_deadline, write_deadline, peer};
  detail::Served served{true, false};
  const core::TimePoint accepted = accepted_at.value_or(clock.now());  // the first head's clock
  for (bool first = true; served.keep_open; first = false) {
    if (buffer.size() == 0) {  // wait for the next request (idle: a drain may close it)
      if (!first && env.services.draining.load(std::memory_order_relaxed)) {
        break;
      }
      const config::HttpConfig& http = detail::idle_buffer(buffer, env);
      entry.idle = true;
      read_deadline.arm(clock.now() + (first ? http.header_timeout : http.idle_timeout));
      auto [ec, n] =
          co_await stream.async_read_some(buffer.prepare(detail::kFirstRead), pooled(env.ops));
      read_deadline.disarm();
      entry.idle = false;
      if (ec) {
        served = {};
        break;  // idle timeout, the client closed, or a drain closed idle connections
      }
      buffer.commit(n);
    }
    const std::shared_ptr<const ThreadView> view = env.view.current();  // the request's config
    auto lease = env.contexts.acquire();
    RequestContext& ctx = begin_request(*lease, *view->snapshot, env);
    std::optional<GatewayError> refused;
    std::size_t scanned = 0;
    std::size_t end = http1::find_head_end(buffered(buffer), scanned);
    const core::TimePoint head_since = first ? accepted : ctx.started;
    if (end == 0 &&
        (end = co_await detail::wait_for_head(ctx, down, env, head_since, refused)) == 0 &&
        !refused) {
      served = {};
      break;  // the client went away before a whole head: nobody to answer
    }
    bool await_store = false;
    if (!refused) {
      end = detail::skip_empty_line(buffer, end);
      refused = intake(ctx, buffered(buffer).substr(0, end), env, peer, await_store);
    }
    if (await_store) {
      const limiter::LimitDecision decision =
          co_await env.services.store.decide(env.store_slot, limit_policy(ctx, *route_limit(ctx)),
                                             ctx.user, net::use_awaitable_t<Executor>{});
      refused = after_limit(ctx, decision, env);
    }
    if (refused) {
      served = co_await detail::answer(ctx, stream, buffer, write_deadline, env, *refused);
    } else {
      co_await exchange(ctx, down, up);
      served = detail::after_exchange(ctx, buffer);
    }
    record_step(ctx, clock.now(), peer, env.access_log);
  }
  co_await detail::close_gracefully(stream, buffer, read_deadline, clock, served.linger);
  (void)slot;  // released (the connection counted closed) when the coroutine ends
}

}  // namespace sluice::proxy
