// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/server_session.hpp"

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <limits>
#include <string>

#include "gateway/proxy/exchange.hpp"
#include "gateway/proxy/forwarder.hpp"
#include "gateway/proxy/identity.hpp"
#include "gateway/proxy/io_deadline.hpp"
#include "gateway/proxy/reply.hpp"
#include "gateway/proxy/router.hpp"
#include "gateway/proxy/traffic_policy.hpp"
#include "gateway/proxy/worker.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kFirstRead = 1024;        // a typical request head fits
constexpr std::size_t kIdleBufferLimit = 4096;  // larger read buffers are freed between requests
constexpr core::Duration kLingerTime = 2s;      // lingering close: how long to drain the client
constexpr std::size_t kLingerBytes = 1 << 20;   // ... and how much

struct Served {
  bool reusable = false;
  bool linger = false;  ///< the client may still be sending: drain it before closing
};

bool idempotent(http::verb method) {
  switch (method) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::put:
    case http::verb::delete_:
    case http::verb::options:
    case http::verb::trace:
      return true;
    default:
      return false;
  }
}

/// The client closed or reset before completing a head: nobody to answer.
bool client_went_away(beast::error_code ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::operation_aborted || ec == net::error::broken_pipe;
}

GatewayError read_failure(beast::error_code ec) {
  if (ec == beast::error::timeout) {
    return GatewayError::kHeaderTimeout;
  }
  if (ec == http::error::header_limit) {
    return GatewayError::kHeaderTooLarge;
  }
  if (ec == http::error::body_limit) {
    return GatewayError::kPayloadTooLarge;  // a Content-Length above max_body_bytes
  }
  return GatewayError::kBadRequest;
}

/// One access log line, filled as the request goes.
struct LogLine {
  std::chrono::system_clock::time_point wall = std::chrono::system_clock::now();
  core::TimePoint started;
  std::string request_id;
  std::string method = "-";
  std::string path = "-";
  std::string_view route = "none";
  std::string_view backend = "none";
  std::string_view endpoint = "-";
  std::string user;  ///< hashed; empty before identification
  std::string_view limit = "none";
  std::string_view breaker = "off";
  metrics::RouteMetrics* metrics = nullptr;
  ExchangeOutcome outcome;

  /// The request is over: counts it and writes its access log line.
  void write(Worker& worker) const { write(worker, worker.services().clock.now()); }
  void write(Worker& worker, core::TimePoint now) const {
    const auto elapsed = now - started;
    metrics->record(outcome.status, std::chrono::duration<double>(elapsed).count());
    auto& access = worker.services().access_log;
    if (!access.enabled()) {
      return;
    }
    log::AccessRecord r;
    r.ts = wall;
    r.request_id = request_id;
    r.method = method;
    r.path = path;
    r.route = route;
    r.backend = backend;
    r.endpoint = outcome.endpoint != nullptr ? std::string_view(outcome.endpoint->label) : endpoint;
    r.status = outcome.status;
    r.bytes_in = outcome.bytes_in;
    r.bytes_out = outcome.bytes_out;
    if (!user.empty()) {
      r.user = user;
    }
    r.limit = limit;
    r.breaker = breaker;
    r.duration_ms = std::chrono::duration<double, std::milli>(elapsed).count();
    if (outcome.upstream_time) {
      r.upstream_ms = std::chrono::duration<double, std::milli>(*outcome.upstream_time).count();
    }
    access.write(r);
  }
};

/// Answers with a gateway error; keeps the connection only when allowed and nothing is unread.
net::awaitable<Served> reply(Worker& worker, beast::tcp_stream& down, GatewayError error,
                             const ReplyOptions& options, const config::HttpConfig& http_cfg,
                             LogLine& line) {
  const Replied replied = co_await reply_error(down, error, options, http_cfg.idle_timeout);
  line.outcome.status = replied.status;
  line.outcome.bytes_out = replied.body_bytes;
  line.write(worker);
  const bool keep = options.keep_alive && line.outcome.status != 0;
  co_return Served{keep, !keep};
}

void apply_limits(RequestParser& parser, const config::HttpConfig& http_cfg) {
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::uint64_t>(
      http_cfg.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser.body_limit(http_cfg.max_body_bytes);
}

/// What exchange() needs to know of the client's request (read before it is rewritten).
ExchangeRequest describe_exchange(const http::request_header<>& req, const Backend& backend,
                                  const config::HttpConfig& http_cfg,
                                  const std::string& request_id) {
  ExchangeRequest xr;
  xr.backend = &backend;
  xr.http = &http_cfg;
  xr.request_id = request_id;
  xr.head_request = req.method() == http::verb::head;
  xr.idempotent = idempotent(req.method());
  xr.client_version = req.version();
  xr.send_continue = beast::iequals(req[http::field::expect], "100-continue");
  return xr;
}

/// Consumes a request body that is already entirely in `buffer` (a small POST that gets a
/// 404 or 405), so the connection can stay open. False if the body is not all there.
bool discard_buffered_body(RequestParser& parser, beast::flat_buffer& buffer) {
  const auto length = parser.content_length();
  if (!parser.is_done() && (!length || *length > buffer.size())) {
    return false;
  }
  std::array<char, 4096> sink{};
  while (!parser.is_done()) {
    parser.get().body().data = sink.data();
    parser.get().body().size = sink.size();
    beast::error_code ec;
    buffer.consume(parser.put(buffer.data(), ec));
    if (ec && ec != http::error::need_buffer) {
      return false;
    }
  }
  return true;
}

/// Reads the request head within `timeout`. Not with tcp_stream's own expiry: that closes the
/// socket, and a client whose head is too slow deserves its 408 before the close.
net::awaitable<beast::error_code> read_head_within(beast::tcp_stream& down,
                                                   beast::flat_buffer& buffer,
                                                   RequestParser& parser, IoDeadline& deadline,
                                                   core::Duration timeout) {
  deadline.arm(down, timeout);
  down.expires_never();
  auto [ec, n] = co_await http::async_read_header(down, buffer, parser, kAsTuple);
  deadline.disarm();
  co_return deadline.expired() ? beast::error_code(beast::error::timeout) : ec;
}

/// What the steps after routing share.
struct Routed {
  beast::tcp_stream& down;
  beast::flat_buffer& buffer;
  RequestParser& parser;
  const config::HttpConfig& http_cfg;
  LogLine& line;
  ReplyOptions& options;
  bool keep_wanted = false;
  std::array<ExtraField, 2> extra;  ///< the rate-limit fields, when the route has a policy
};

/// Applies a limit decision: counts it, fills `fields` and the reply options with the
/// rate-limit fields, and returns whether the request must be answered 429. Synchronous, so
/// the common case (admitted by the memory store) costs no extra coroutine frame.
bool judge(Services& svc, const RouteLimit& limit, const limiter::LimitDecision& decision,
           Routed& r, RateLimitFields& fields) {
  if (svc.store_ok != nullptr) {
    svc.store_ok->Increment();
  }
  const limiter::Verdict verdict = count_decision(limit, decision);
  r.line.limit = limit_label(verdict);
  rate_limit_fields(limit, decision, fields);
  r.extra = {{{"RateLimit-Policy", fields.policy()}, {"RateLimit", fields.state()}}};
  r.options.fields = r.extra;
  return limiter::rejects(verdict);
}

net::awaitable<Served> reply_limited(Worker& worker, const RouteLimit& limit,
                                     const RateLimitFields& fields, bool store_unavailable,
                                     Routed& r) {
  if (store_unavailable) {  // on_error "deny" (SPEC §4a): 503, not 429
    r.options.keep_alive = r.keep_wanted && discard_buffered_body(r.parser, r.buffer);
    r.options.retry_after_s = 1;
    r.options.fields = {};
    co_return co_await reply(worker, r.down, GatewayError::kLimitStoreUnavailable, r.options,
                             r.http_cfg, r.line);
  }
  const std::string body = limited_body(limit, fields.retry_after_s);
  r.options.keep_alive = r.keep_wanted && discard_buffered_body(r.parser, r.buffer);
  r.options.retry_after_s = static_cast<unsigned>(fields.retry_after_s);
  r.options.body = body;
  co_return co_await reply(worker, r.down, GatewayError::kRateLimited, r.options, r.http_cfg,
                           r.line);
}

net::awaitable<Served> serve_routed(Worker& worker, const Snapshot& snapshot, const Route& route,
                                    beast::tcp_stream& down, beast::flat_buffer& buffer,
                                    RequestParser& parser, const tcp::endpoint& peer, LogLine& line,
                                    ReplyOptions& options, bool keep_wanted) {
  Services& svc = worker.services();
  const config::HttpConfig& http_cfg = snapshot.config().http;
  const Backend& backend = snapshot.backend(route.backend);
  line.backend = backend.name();
  auto& req = parser.get();
  Routed r{down, buffer, parser, http_cfg, line, options, keep_wanted, {}};
  std::string scratch;
  std::string_view user;
  if (route.rate_limit != nullptr || svc.access_log.enabled()) {  // else nobody needs the user
    user = identify(req.base(), snapshot.config().identity, peer.address(),
                    http_cfg.trusted_proxies, scratch);
  }
  if (svc.access_log.enabled()) {
    line.user = user_label(svc.user_hash, user);
  }
  RateLimitFields fields;
  if (route.rate_limit != nullptr) {
    const RouteLimit& limit = *route.rate_limit;
    std::optional<limiter::LimitDecision> decision = svc.shared.store.try_decide(limit.id, user);
    if (!decision) {
      const limiter::LimitDecision later =
          co_await svc.shared.store.decide(limit.id, user, net::use_awaitable);
      decision = later;
    }
    if (judge(svc, limit, *decision, r, fields)) {
      co_return co_await reply_limited(worker, limit, fields, decision->unavailable, r);
    }
  }
  line.breaker = backend.config().breaker.enabled ? "pass" : "off";
  std::optional<breaker::Admission> admission = backend.breaker().try_admit(line.started);
  if (!admission) {
    backend.metrics().breaker_drops->Increment();
    line.breaker = "dropped";
    options.keep_alive = keep_wanted && discard_buffered_body(parser, buffer);
    options.retry_after_s = 1;
    options.body = backend.unavailable_body();
    co_return co_await reply(worker, down, GatewayError::kBackendUnavailable, options, http_cfg,
                             line);
  }
  ExchangeRequest xr = describe_exchange(req.base(), backend, http_cfg, line.request_id);
  xr.keep_alive_wanted = keep_wanted;
  xr.response_fields = options.fields;
  if (route.strip_prefix) {
    req.target(upstream_target(route, req.target()));
  }
  req.version(11);
  prepare_upstream_request(req.base(), peer.address(),
                           is_trusted(peer.address(), http_cfg.trusted_proxies));
  line.outcome = co_await exchange(worker, xr, down, buffer, parser);
  const core::TimePoint done = svc.clock.now();
  record_upstream(backend, line.outcome, admission, done);
  line.write(worker, done);
  // Linger only when the client may still be sending (an unread body or pipelined requests):
  // after a complete request, closing at once cannot reset our response.
  const bool client_may_send = !parser.is_done() || buffer.size() > 0;
  co_return Served{line.outcome.reusable, !line.outcome.reusable && client_may_send};
}

net::awaitable<Served> serve_request(Worker& worker, const ThreadView& view,
                                     beast::tcp_stream& down, beast::flat_buffer& buffer,
                                     const tcp::endpoint& peer, IoDeadline& head_deadline) {
  const Snapshot& snapshot = *view.snapshot;
  const config::HttpConfig& http_cfg = snapshot.config().http;
  LogLine line;
  line.started = worker.services().clock.now();
  line.metrics = &snapshot.unrouted_metrics();
  RequestParser parser;
  apply_limits(parser, http_cfg);
  const beast::error_code ec =
      co_await read_head_within(down, buffer, parser, head_deadline, http_cfg.header_timeout);
  ReplyOptions options;
  if (ec) {
    if (client_went_away(ec)) {
      co_return Served{};
    }
    line.request_id = make_request_id();
    options.request_id = line.request_id;
    co_return co_await reply(worker, down, read_failure(ec), options, http_cfg, line);
  }
  auto& req = parser.get();
  line.request_id = ensure_request_id(req.base());
  line.method = std::string(req.method_string());
  line.path = std::string(target_path(req.target()));
  options.version = req.version();
  options.request_id = line.request_id;
  options.head_request = req.method() == http::verb::head;
  if (req.count(http::field::transfer_encoding) != 0 && !parser.chunked()) {
    // A coding other than a final "chunked" leaves the body unframed (RFC 9112 §6.3): 400.
    co_return co_await reply(worker, down, GatewayError::kBadRequest, options, http_cfg, line);
  }
  const bool keep_wanted = req.keep_alive() && !worker.services().draining.load();
  const RouteMatch match =
      snapshot.router().match(req[http::field::host], req.method_string(), req.target());
  if (match.kind != RouteMatch::Kind::kMatched) {
    const bool no_route = match.kind == RouteMatch::Kind::kNoRoute;
    options.keep_alive = keep_wanted && discard_buffered_body(parser, buffer);
    options.allow = match.allow;
    co_return co_await reply(worker, down,
                             no_route ? GatewayError::kNoRoute : GatewayError::kMethodNotAllowed,
                             options, http_cfg, line);
  }
  const Route& route = *match.route;
  line.route = route.name;
  line.metrics = route.metrics;
  co_return co_await serve_routed(worker, snapshot, route, down, buffer, parser, peer, line,
                                  options, keep_wanted);
}

/// Half-closes, then reads and drops what the client still sends for a short while before
/// closing: closing with unread data would send a reset that can destroy our last response
/// before the client reads it (nginx's lingering close).
net::awaitable<void> close_gracefully(Worker& worker, beast::tcp_stream& stream, bool linger) {
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (!ec && linger) {
    BodyBuffer sink = worker.borrow_buffer();
    stream.expires_after(kLingerTime);
    for (std::size_t total = 0; total < kLingerBytes;) {
      auto [rec, n] =
          co_await stream.async_read_some(net::buffer(sink.data(), BodyBuffer::kSize), kAsTuple);
      if (rec) {
        break;
      }
      total += n;
    }
  }
  stream.socket().close(ec);
}

}  // namespace

net::awaitable<void> run_session(Worker& worker, tcp::socket socket,
                                 [[maybe_unused]] ConnectionSlot slot) {
  beast::tcp_stream stream(std::move(socket));
  beast::error_code ec;
  const tcp::endpoint peer = stream.socket().remote_endpoint(ec);
  if (ec) {
    co_return;
  }
  SessionEntry entry{&stream, true};
  const auto handle = worker.add_session(entry);
  beast::flat_buffer buffer;
  IoDeadline head_deadline(stream.get_executor());  // one timer for all the session's heads
  bool first = true;
  Served served{true, false};
  while (served.reusable) {
    auto view = worker.view();
    if (buffer.size() == 0) {
      if (worker.services().draining.load() && !first) {
        break;
      }
      if (buffer.capacity() > kIdleBufferLimit) {
        buffer.shrink_to_fit();  // an idle connection keeps only a small buffer
      }
      const auto& http_cfg = view->snapshot->config().http;
      entry.idle = true;
      stream.expires_after(first ? http_cfg.header_timeout : http_cfg.idle_timeout);
      auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kFirstRead), kAsTuple);
      entry.idle = false;
      if (rec) {
        break;  // idle timeout, the client closed, or a drain closed idle connections
      }
      buffer.commit(n);
      view = worker.view();  // the request runs on the newest config
    }
    first = false;
    served = co_await serve_request(worker, *view, stream, buffer, peer, head_deadline);
  }
  co_await close_gracefully(worker, stream, served.linger);
  worker.remove_session(handle);
}

}  // namespace sluice::proxy
