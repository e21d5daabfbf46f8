// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/core/string.hpp>
#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <memory_resource>

#include "gateway/http1/path_normalizer.hpp"
#include "gateway/proxy/connection_gate.hpp"
#include "gateway/proxy/deadline.hpp"
#include "gateway/proxy/exchange.hpp"
#include "gateway/proxy/keep_alive.hpp"
#include "gateway/proxy/reply.hpp"
#include "gateway/proxy/request_context.hpp"
#include "gateway/proxy/services.hpp"
#include "gateway/proxy/session_list.hpp"
#include "gateway/proxy/steps/breaker_step.hpp"
#include "gateway/proxy/steps/identify_step.hpp"
#include "gateway/proxy/steps/limit_step.hpp"
#include "gateway/proxy/steps/record_step.hpp"

namespace sluice::proxy {

/// What a session needs of its worker besides the upstream side. References outlive every
/// session; confined to the worker's thread.
struct SessionEnv {
  const Services& services;
  WorkerView& view;
  DeadlineSweep& sweep;
  ContextPool& contexts;
  log::AccessLog::Batch* access_log;  ///< null when the access log is off
  store::StoreSlot store_slot;
  SessionList& sessions;
  std::pmr::memory_resource* ops;  ///< the worker's pool for operation memory
};

namespace detail {

constexpr std::size_t kFirstRead = 1024;        // a typical request head fits
constexpr std::size_t kHeadRead = 4096;         // more of a head that did not
constexpr std::size_t kIdleBufferLimit = 4096;  // larger read buffers are freed between requests
constexpr core::Duration kLingerTime = std::chrono::seconds(2);  // lingering close: how long
constexpr std::size_t kLingerBytes = std::size_t{1} << 20;       // ... and how much

/// How a request left the connection.
struct Served {
  bool keep_open = false;
  bool linger = false;  ///< the client may still be sending: drain it before closing
};

template <typename Stream>
void cancel_stream(void* stream) noexcept {
  StreamOps<Stream>::cancel(*static_cast<Stream*>(stream));
}
template <typename Stream>
void close_stream(void* stream) noexcept {
  StreamOps<Stream>::close(*static_cast<Stream*>(stream));
}

/// The client closed or reset before completing a head: nobody to answer.
inline bool client_went_away(boost::system::error_code ec) {
  return ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::operation_aborted || ec == net::error::broken_pipe;
}

inline GatewayError parse_failure(boost::system::error_code ec) {
  namespace http = boost::beast::http;
  if (ec == http::error::header_limit) {
    return GatewayError::kHeaderTooLarge;
  }
  if (ec == http::error::body_limit) {
    return GatewayError::kPayloadTooLarge;  // a Content-Length above max_body_bytes
  }
  return GatewayError::kBadRequest;
}

inline std::string_view buffered(const beast::flat_buffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

/// Reads until `buffer` holds a whole request head, within the armed deadline. Returns its end,
/// 0 with `ec` set when it failed (beast::error::timeout, or header_limit past `max_bytes`).
template <typename Stream>
Task<std::size_t> read_head(Stream& stream, beast::flat_buffer& buffer, Deadline& deadline,
                            std::uint64_t max_bytes, std::pmr::memory_resource* ops,
                            boost::system::error_code& ec) {
  std::size_t scanned = 0;
  for (;;) {
    if (const std::size_t end = http1::find_head_end(buffered(buffer), scanned); end != 0) {
      co_return end;
    }
    if (buffer.size() >= max_bytes) {
      ec = boost::beast::http::error::header_limit;
      co_return 0;
    }
    auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kHeadRead), pooled(ops));
    if (deadline.expired()) {
      ec = beast::error::timeout;
      co_return 0;
    }
    if (rec) {
      ec = rec;
      co_return 0;
    }
    buffer.commit(n);
  }
}

/// Consumes the request's head, and its body when the body is entirely in `buffer` (a small
/// POST that gets a 404, 405 or 429), so the connection can carry the next request. False when
/// the body is not all there (the connection must close).
inline bool consume_request(RequestContext& ctx, beast::flat_buffer& buffer) {
  http1::RequestParser& parser = *ctx.parser;
  std::size_t parsed = ctx.head().size;
  const std::string_view data = buffered(buffer);
  while (!parser.is_done() && parsed < data.size()) {
    boost::system::error_code ec;
    const std::size_t n = parser.put(data.substr(parsed), ec);
    if (ec || n == 0) {
      break;
    }
    parsed += n;
  }
  buffer.consume(parser.is_done() ? parsed : ctx.head().size);
  return parser.is_done();
}

/// Answers `error` itself: the reply, its keep-alive verdict, the write.
template <typename Stream>
Task<Served> answer(RequestContext& ctx, Stream& stream, beast::flat_buffer& buffer,
                    Deadline& write_deadline, const SessionEnv& env, GatewayError error) {
  ctx.error = error;
  const bool parsed = ctx.parser->is_header_done();
  const bool request_read = parsed && consume_request(ctx, buffer);
  ctx.keep_alive =
      decide_keep_alive(ctx, {.draining = env.services.draining.load(std::memory_order_relaxed),
                              .request_read = request_read,
                              .closes_itself = false});
  const unsigned version = parsed ? ctx.head().version : 11;
  const bool head_request = parsed && ctx.head().verb == boost::beast::http::verb::head;
  compose_reply(ctx, version, head_request);
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

/// Routing: the normalized path, the route, and the target the upstream will get.
inline std::optional<GatewayError> route_request(RequestContext& ctx) {
  const http1::RequestHead& head = ctx.head();
  const config::HttpConfig& http = ctx.snapshot->config().http;
  const std::string_view raw_path = target_path(head.target);
  if (raw_path.empty() || raw_path.front() != '/') {
    return GatewayError::kBadRequest;  // asterisk-form, or an authority without a path
  }
  switch (http1::normalize_path(raw_path, http.merge_slashes, ctx.path_scratch)) {
    case http1::PathStatus::kUnchanged:
      ctx.path = raw_path;
      break;
    case http1::PathStatus::kRewritten:
      ctx.path = ctx.path_scratch;
      break;
    case http1::PathStatus::kAboveRoot:
    case http1::PathStatus::kBadEncoding:
      return GatewayError::kBadRequest;
  }
  ctx.query = target_query(head.target);
  const RouteMatch match = ctx.snapshot->router().match(
      head.fields.value(boost::beast::http::field::host), head.method, ctx.path);
  if (match.kind == RouteMatch::Kind::kNoRoute) {
    return GatewayError::kNoRoute;
  }
  if (match.kind == RouteMatch::Kind::kMethodNotAllowed) {
    ctx.allow_scratch = match.allow;
    ctx.allow = ctx.allow_scratch;
    return GatewayError::kMethodNotAllowed;
  }
  ctx.route = match.route;
  ctx.backend = &ctx.snapshot->backend(match.route->backend);
  ctx.route_metrics = match.route->metrics;
  const bool origin_form = head.target.front() == '/';
  if (origin_form && ctx.path.data() == raw_path.data() && !ctx.route->strip_prefix) {
    ctx.upstream_target = head.target;  // nothing to change: the client's bytes
  } else {
    // (an absolute-form target is forwarded in origin form, by its normalized path)
    ctx.upstream_target = upstream_target(*ctx.route, ctx.path, ctx.query, ctx.target_scratch);
  }
  return std::nullopt;
}

/// After the head is parsed: the request id, the log's copies, framing checks and routing.
/// Returns the answer when the request goes no further.
inline std::optional<GatewayError> accept_head(RequestContext& ctx, const SessionEnv& env,
                                               const Peer& peer) {
  const http1::RequestHead& head = ctx.head();
  ctx.client_keep_alive = head.keep_alive;
  const http1::FieldRef* id = head.fields.find("X-Request-Id");
  if (id != nullptr && http1::usable_request_id(id->value) &&
      head.fields.count("X-Request-Id") == 1) {
    ctx.request_id.keep(id->value);
  } else {
    ctx.request_id.generate();
  }
  if (env.access_log != nullptr) {
    keep_for_log(ctx, peer);
  }
  if (head.fields.count(boost::beast::http::field::transfer_encoding) != 0 &&
      head.framing != http1::Framing::kChunked) {
    // A coding other than a final "chunked" leaves the body unframed (RFC 9112 §6.3): 400.
    return GatewayError::kBadRequest;
  }
  const auto refused = route_request(ctx);
  if (env.access_log != nullptr && !ctx.path.empty()) {
    ctx.log_path.assign(ctx.path);  // the log shows the path that was judged and forwarded
  }
  if (refused) {
    return refused;
  }
  identify_step(ctx, peer, env.access_log != nullptr ? &env.services.user_hash : nullptr);
  return std::nullopt;
}

/// The head's parse, with the parser's limits from the config. Returns the answer on failure.
inline std::optional<GatewayError> parse_head(RequestContext& ctx, std::string_view head_bytes) {
  const config::HttpConfig& http = ctx.snapshot->config().http;
  http1::RequestParser& parser = *ctx.parser;
  parser.header_limit(static_cast<std::uint32_t>(
      std::min<std::uint64_t>(http.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser.body_limit(http.max_body_bytes);
  boost::system::error_code ec;
  parser.put(head_bytes, ec);
  if (ec || !parser.is_header_done()) {
    ctx.request_id.generate();
    return parse_failure(ec ? ec : boost::beast::http::error::bad_value);
  }
  return std::nullopt;
}

/// The steps of a parsed request that need no waiting: accept the head (request id, routing,
/// identity), then the limit and the breaker. Returns the answer when the request goes no
/// further; `await_store` is set when the store must be asked asynchronously (the session
/// awaits it, then calls after_limit()).
inline std::optional<GatewayError> judge(RequestContext& ctx, const SessionEnv& env,
                                         const Peer& peer, bool& await_store) {
  await_store = false;
  if (auto refused = accept_head(ctx, env, peer)) {
    return refused;
  }
  if (const RouteLimit* limit = route_limit(ctx)) {
    const auto decision = limit_now(ctx, *limit, env.services.store, env.store_slot);
    if (!decision) {
      await_store = true;
      return std::nullopt;
    }
    if (auto refused = apply_limit(ctx, *limit, *decision)) {
      return refused;
    }
  }
  return breaker_step(ctx, ctx.started);
}

/// The rest of judge() once an asynchronous limit decision arrived.
inline std::optional<GatewayError> after_limit(RequestContext& ctx,
                                               const limiter::LimitDecision& decision) {
  if (auto refused = apply_limit(ctx, *route_limit(ctx), decision)) {
    return refused;
  }
  return breaker_step(ctx, ctx.started);
}

/// Waits for the rest of a request head (it did not arrive in one read). Returns its end, or
/// the answer (408 past header_timeout_ms, 431 past max_header_bytes), or neither when the
/// client went away.
template <typename Stream>
Task<std::size_t> wait_for_head(RequestContext& ctx, Downstream<Stream> down, const SessionEnv& env,
                                std::optional<GatewayError>& refused, bool& gone) {
  const config::HttpConfig& http = ctx.snapshot->config().http;
  boost::system::error_code ec;
  down.read_deadline.arm(ctx.started + http.header_timeout);
  const std::size_t end = co_await read_head(down.stream, down.buffer, down.read_deadline,
                                             http.max_header_bytes, env.ops, ec);
  down.read_deadline.disarm();
  if (end == 0) {
    if (ec != beast::error::timeout && ec != boost::beast::http::error::header_limit) {
      gone = true;  // the client went away: nobody to answer
    } else {
      ctx.request_id.generate();
      refused = ec == beast::error::timeout ? GatewayError::kHeaderTimeout
                                            : GatewayError::kHeaderTooLarge;
    }
  }
  co_return end;
}

/// Half-closes, then reads and drops what the client still sends for a short while before
/// closing: closing with unread data would send a reset that can destroy our last response
/// before the client reads it (nginx's lingering close).
template <typename Stream>
Task<void> close_gracefully(Stream& stream, beast::flat_buffer& buffer, Deadline& deadline,
                            const core::Clock& clock, bool linger) {
  StreamOps<Stream>::shutdown_send(stream);
  if (linger && StreamOps<Stream>::is_open(stream)) {
    deadline.arm(clock.now() + kLingerTime);
    for (std::size_t total = 0; total < kLingerBytes;) {
      buffer.consume(buffer.size());
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(kHeadRead), kAsTuple);
      if (ec) {
        break;
      }
      total += n;
    }
    deadline.disarm();
  }
  StreamOps<Stream>::close(stream);
}

}  // namespace detail

/// Serves one client connection until it closes (docs/behaviour.md §4): keep-alive and
/// pipelining (requests answered in order); the head read within `header_timeout_ms` (408 then
/// close), the wait for the next request bounded by `idle_timeout_ms`; oversized heads 431,
/// bodies 413, malformed requests 400 (all closing the connection); every request through
/// serve_request(). The coroutine owns the stream and `slot`; it runs on the worker's thread and
/// never throws. A template over the client's stream type (TCP, TLS, or a test stream) and the
/// upstream's (docs/architecture.md, "Streams").
template <typename Down, typename Up>
Task<void> run_session(Down stream, Peer peer, SessionEnv& env, UpstreamContext<Up>& up,
                       ConnectionSlot slot) {
  const core::Clock& clock = env.services.clock;
  beast::flat_buffer buffer;
  Deadline read_deadline(env.sweep, &detail::cancel_stream<Down>, &stream);
  Deadline write_deadline(env.sweep, &detail::cancel_stream<Down>, &stream);
  SessionEntry entry(env.sessions, &detail::cancel_stream<Down>, &detail::close_stream<Down>,
                     &stream);
  bool first = true;
  detail::Served served{true, false};
  while (served.keep_open) {
    if (buffer.size() == 0) {
      if (env.services.draining.load(std::memory_order_relaxed) && !first) {
        break;
      }
      if (buffer.capacity() > detail::kIdleBufferLimit) {
        buffer.shrink_to_fit();  // an idle connection keeps only a small buffer
      }
      const config::HttpConfig& http = env.view.current()->snapshot->config().http;
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
    first = false;
    const std::shared_ptr<const ThreadView> view = env.view.current();  // the request's config
    auto lease = env.contexts.acquire();
    RequestContext& ctx = *lease;
    ctx.reset(clock.now(), *view->snapshot);
    if (env.access_log != nullptr) {
      ctx.wall = std::chrono::system_clock::now();
    }
    // One request, from its head to its log line (docs/architecture.md, "The request path"),
    // in this coroutine: the steps are plain functions, and only the exchange, an incomplete
    // head, a store that must be awaited or a gateway answer add a frame of their own.
    const Downstream<Down> down{stream, buffer, read_deadline, write_deadline, peer};
    std::optional<GatewayError> refused;
    std::size_t scanned = 0;
    std::size_t end = http1::find_head_end(detail::buffered(buffer), scanned);
    if (end == 0) {
      bool gone = false;
      end = co_await detail::wait_for_head(ctx, down, env, refused, gone);
      if (gone) {
        served = {};
        break;
      }
    }
    bool await_store = false;
    if (!refused) {
      refused = detail::parse_head(ctx, detail::buffered(buffer).substr(0, end));
    }
    if (!refused) {
      refused = detail::judge(ctx, env, peer, await_store);
    }
    if (await_store) {
      const limiter::LimitDecision decision = co_await env.services.store.decide(
          env.store_slot, route_limit(ctx)->id, ctx.user, net::use_awaitable_t<Executor>{});
      refused = detail::after_limit(ctx, decision);
    }
    if (refused) {
      served = co_await detail::answer(ctx, stream, buffer, write_deadline, env, *refused);
    } else {
      co_await exchange(ctx, down, up);
      const bool keep = ctx.outcome.answer_complete && ctx.keep_alive;
      // Linger only when the client may still be sending (an unread body or pipelined
      // requests): after a complete request, closing at once cannot reset our response.
      served = {keep, !keep && (!ctx.parser->is_done() || buffer.size() > 0)};
    }
    record_step(ctx, clock.now(), peer, env.access_log);
  }
  co_await detail::close_gracefully(stream, buffer, read_deadline, clock, served.linger);
  (void)slot;  // released (the connection counted closed) when the coroutine ends
}

}  // namespace sluice::proxy
