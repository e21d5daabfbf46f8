// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/exchange.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <string>

#include "gateway/proxy/forwarder.hpp"
#include "gateway/proxy/reply.hpp"
#include "gateway/proxy/worker.hpp"

namespace sluice::proxy {
namespace {

using namespace net::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

struct Upstream {
  ConnectionPtr conn;  // null: no connection
  bool reused = false;
  beast::error_code error;
};

/// Everything one exchange works on. Lives in the exchange's coroutine frame.
struct Context {
  Context(Worker& w, const ExchangeRequest& r, beast::tcp_stream& d, beast::flat_buffer& db,
          RequestParser& p, ExchangeOutcome& o)
      : worker(w), request(r), down(d), down_buffer(db), parser(p), out(o) {}

  Worker& worker;
  const ExchangeRequest& request;
  beast::tcp_stream& down;
  beast::flat_buffer& down_buffer;
  RequestParser& parser;
  ExchangeOutcome& out;
  const UpstreamEndpoint* endpoint = nullptr;
  Upstream up;
  std::optional<ResponseParser> response;
  bool bodyless = false;

  [[nodiscard]] const config::BackendConfig& backend() const { return request.backend->config(); }
  [[nodiscard]] core::Duration down_timeout() const { return request.http->idle_timeout; }
  /// Decided when the response starts: a drain that began meanwhile closes the connection.
  [[nodiscard]] bool keep_alive_wanted() const {
    return request.keep_alive_wanted && !worker.services().draining.load();
  }
  void close_upstream() {
    if (up.conn) {
      beast::error_code ignored;
      up.conn->stream.socket().close(ignored);
      up.conn.reset();
    }
  }
};

net::awaitable<Upstream> connect(Worker& worker, const UpstreamEndpoint& endpoint,
                                 core::Duration timeout) {
  Upstream out;
  auto conn = std::make_unique<UpstreamConnection>(worker.context());
  beast::tcp_stream& stream = conn->stream;
  stream.expires_after(timeout);
  if (endpoint.address) {
    auto [ec] = co_await stream.async_connect(*endpoint.address, kAsTuple);
    out.error = ec;
  } else {
    // Host names resolve per new connection (pooled connections skip this).
    auto [rec, results] = co_await worker.resolver().async_resolve(
        endpoint.host, std::to_string(endpoint.port), kAsTuple);
    out.error = rec;
    if (!rec) {
      stream.expires_after(timeout);
      auto [ec, connected] = co_await stream.async_connect(results, kAsTuple);
      out.error = ec;
    }
  }
  if (!out.error) {
    beast::error_code ignored;
    stream.socket().set_option(tcp::no_delay(true), ignored);
    out.conn = std::move(conn);
  }
  co_return out;
}

net::awaitable<Upstream> acquire(Worker& worker, const UpstreamEndpoint& endpoint,
                                 core::Duration timeout) {
  if (auto pooled = worker.pool().checkout(endpoint.label)) {
    Upstream out;
    out.conn = std::move(pooled);
    out.reused = true;
    co_return out;
  }
  co_return co_await connect(worker, endpoint, timeout);
}

/// Reads the response head, skipping interim 1xx responses. Without `timeout` the read has no
/// deadline of its own (duplex mode arms DuplexState::head_deadline instead).
net::awaitable<beast::error_code> read_head(Context& c, std::optional<core::Duration> timeout) {
  auto& up = c.up.conn->stream;
  for (;;) {
    c.response.emplace();
    c.response->body_limit(boost::none);
    c.response->skip(c.request.head_request);
    if (timeout) {
      up.expires_after(*timeout);
    } else {
      up.expires_never();
    }
    auto [ec, n] = co_await http::async_read_header(up, c.up.conn->buffer, *c.response, kAsTuple);
    if (ec) {
      co_return ec;
    }
    const unsigned status = c.response->get().result_int();
    if (status == 101) {
      co_return http::error::bad_status;  // no upgrade was forwarded, so none may come back
    }
    if (status >= 200) {
      co_return beast::error_code{};
    }
  }
}

/// Hygiene and framing for the client; returns whether the response offers keep-alive.
bool prepare_response(Context& c) {
  ResponseParser& rp = *c.response;
  auto& res = rp.get();
  strip_hop_by_hop(res.base());
  if (res.count("X-Request-Id") == 0) {
    res.set("X-Request-Id", c.request.request_id);
  }
  for (const ExtraField& f : c.request.response_fields) {
    res.set(f.name, f.value);
  }
  const bool eof_delimited = !rp.is_done() && !rp.chunked() && !rp.content_length();
  bool keep = c.keep_alive_wanted();
  if (c.request.client_version == 10) {
    res.version(10);
    if (rp.chunked()) {
      res.chunked(false);  // HTTP/1.0 has no chunking: delimit by closing
      keep = false;
    }
    keep = keep && !eof_delimited;
  } else {
    res.version(11);
    if (eof_delimited) {
      res.chunked(true);  // keep the client connection: chunk what the upstream delimits by EOF
    }
  }
  res.keep_alive(keep);
  return keep;
}

UpstreamResult upstream_result(GatewayError error) {
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

/// Answers the client with a gateway error when nothing of the response has been sent yet.
net::awaitable<void> fail(Context& c, GatewayError error) {
  c.close_upstream();
  c.out.upstream = upstream_result(error);
  const bool keep = c.keep_alive_wanted() && c.parser.is_done();
  ReplyOptions options;
  options.version = c.request.client_version;
  options.keep_alive = keep;
  options.request_id = c.request.request_id;
  options.head_request = c.request.head_request;
  options.fields = c.request.response_fields;
  const Replied replied = co_await reply_error(c.down, error, options, c.down_timeout());
  c.out.status = replied.status;
  c.out.bytes_out = replied.body_bytes;
  c.out.reusable = keep && c.out.status != 0;
}

GatewayError head_failure(beast::error_code ec, bool timed_out) {
  return timed_out || ec == beast::error::timeout ? GatewayError::kUpstreamTimeout
                                                  : GatewayError::kUpstreamReset;
}

/// Settles both connections once the exchange is over.
void finish(Context& c, const PumpResult& pump, const RelayResult& relay, bool keep) {
  const bool upstream_reusable = pump.complete && relay.complete && c.response &&
                                 c.response->is_done() && c.response->keep_alive() &&
                                 !c.response->need_eof() && c.up.conn->buffer.size() == 0;
  if (upstream_reusable) {
    c.worker.pool().checkin(c.endpoint->label, std::move(c.up.conn),
                            c.backend().max_idle_per_endpoint);
  } else {
    c.close_upstream();
  }
  c.out.bytes_in = pump.body_bytes;
  c.out.bytes_out = relay.body_bytes;
  c.out.status = relay.head_sent ? c.response->get().result_int() : 0;
  c.out.upstream_status = c.response->get().result_int();
  if (!relay.up_error || relay.up_error == net::error::operation_aborted) {
    // (aborted: the client failed and the exchange stopped reading; not the upstream's doing)
    c.out.upstream = UpstreamResult::kResponse;
  } else {
    c.out.upstream =
        relay.up_error == beast::error::timeout ? UpstreamResult::kTimeout : UpstreamResult::kReset;
  }
  c.out.reusable = keep && pump.complete && relay.complete && !relay.need_eof;
}

/// Relays the response whose head was read, through `buffer`; a failure before anything
/// reached the client still gets a proper error reply.
net::awaitable<RelayResult> relay(Context& c, DuplexState& duplex, BodyBuffer& buffer, bool& keep) {
  keep = prepare_response(c);
  const unsigned status = c.response->get().result_int();
  const bool head_only = c.request.head_request || status == 204 || status == 304;
  auto& up = *c.up.conn;
  std::optional<RelayResult> small =
      co_await send_small_response(*c.response, up.buffer, c.down, buffer.data(), BodyBuffer::kSize,
                                   c.down_timeout(), head_only);
  if (small) {
    duplex.response_done = true;
    if (duplex.cancel_downstream_when_done && !duplex.request_done) {
      c.down.cancel();  // an early answer: stop reading the client (as relay_response does)
    }
    co_return *small;
  }
  co_return co_await relay_response(up.stream, up.buffer, *c.response, c.down, buffer.data(),
                                    BodyBuffer::kSize, c.backend().timeout, c.down_timeout(),
                                    head_only, duplex);
}

/// Sends the request: a bodyless one in one plain write when it fits, else through the pump.
net::awaitable<PumpResult> send_request(Context& c, DuplexState& duplex, BodyBuffer& buffer) {
  if (c.bodyless) {
    std::optional<PumpResult> small =
        co_await send_small_request(c.parser.get().base(), c.up.conn->stream, buffer.data(),
                                    BodyBuffer::kSize, c.backend().timeout);
    if (small) {
      duplex.request_done = true;
      co_return *small;
    }
  }
  co_return co_await pump_request(c.down, c.down_buffer, c.parser, c.up.conn->stream, buffer.data(),
                                  BodyBuffer::kSize, c.down_timeout(), c.backend().timeout, duplex);
}

bool retry_on_fresh_connection(const Context& c, const PumpResult& pump, beast::error_code ec) {
  const bool nothing_received =
      !c.response || (!c.response->got_some() && c.up.conn->buffer.size() == 0);
  return c.up.reused && c.bodyless && nothing_received && ec != beast::error::timeout &&
         (c.request.idempotent || pump.up_error);
}

/// The body is absent or already buffered: send everything, then read the response.
net::awaitable<void> sequential(Context& c) {
  const core::Clock& clock = c.worker.services().clock;
  BodyBuffer buffer = c.worker.borrow_buffer();  // one per exchange: request, then response
  for (int attempt = 0;; ++attempt) {
    DuplexState duplex;
    const core::TimePoint sent_at = clock.now();
    const PumpResult pump = co_await send_request(c, duplex, buffer);
    if (pump.down_error) {
      c.close_upstream();
      if (const auto error = body_read_failure(pump.down_error)) {
        co_await fail(c, *error);
      }
      co_return;
    }
    beast::error_code ec = pump.up_error;
    if (!ec) {
      ec = co_await read_head(c, c.backend().timeout);
    }
    if (!ec) {
      c.out.upstream_time = clock.now() - sent_at;
      bool keep = false;
      const RelayResult result = co_await relay(c, duplex, buffer, keep);
      finish(c, pump, result, keep);
      co_return;
    }
    if (attempt == 0 && retry_on_fresh_connection(c, pump, ec)) {
      c.close_upstream();
      c.response.reset();
      c.up = co_await connect(c.worker, *c.endpoint, c.backend().connect_timeout);
      if (!c.up.conn) {
        co_await fail(c, GatewayError::kUpstreamConnect);
        co_return;
      }
      c.up.conn->mark_active(c.request.backend->metrics());
      continue;
    }
    co_await fail(c, head_failure(ec, false));
    co_return;
  }
}

struct Received {
  beast::error_code head_error;
  RelayResult relay;
  bool keep = false;
};

net::awaitable<Received> receive(Context& c, DuplexState& duplex, core::TimePoint sent_at) {
  Received r;
  r.head_error = co_await read_head(c, std::nullopt);
  duplex.head_received = !r.head_error;
  if (duplex.head_deadline != nullptr) {
    duplex.head_deadline->disarm();
  }
  if (r.head_error) {
    duplex.response_done = true;
    co_return r;
  }
  c.out.upstream_time = c.worker.services().clock.now() - sent_at;
  BodyBuffer buffer = c.worker.borrow_buffer();
  r.relay = co_await relay(c, duplex, buffer, r.keep);
  co_return r;
}

/// The body is still arriving: stream it up while the response streams down.
net::awaitable<void> duplex_exchange(Context& c) {
  BodyBuffer buffer = c.worker.borrow_buffer();
  IoDeadline head_deadline(c.worker.context().get_executor());
  DuplexState duplex;
  duplex.cancel_upstream_on_failure = true;
  duplex.cancel_downstream_when_done = true;
  duplex.head_deadline = &head_deadline;
  duplex.head_timeout = c.backend().timeout;
  const core::TimePoint sent_at = c.worker.services().clock.now();
  auto [pump, received] =
      co_await (pump_request(c.down, c.down_buffer, c.parser, c.up.conn->stream, buffer.data(),
                             BodyBuffer::kSize, c.down_timeout(), c.backend().timeout, duplex) &&
                receive(c, duplex, sent_at));
  head_deadline.disarm();
  if (!received.head_error) {
    finish(c, pump, received.relay, received.keep);
    co_return;
  }
  c.out.bytes_in = pump.body_bytes;
  if (const auto error = body_read_failure(pump.down_error)) {
    co_await fail(c, *error);
  } else if (pump.down_error) {
    c.close_upstream();  // the client is gone: nobody to answer
  } else {
    co_await fail(c, head_failure(received.head_error, head_deadline.expired()));
  }
}

}  // namespace

net::awaitable<ExchangeOutcome> exchange(Worker& worker, const ExchangeRequest& request,
                                         beast::tcp_stream& down, beast::flat_buffer& down_buffer,
                                         RequestParser& parser) {
  ExchangeOutcome out;
  Context c(worker, request, down, down_buffer, parser, out);
  const Backend& backend = *request.backend;
  const auto& endpoints = backend.endpoints();
  std::size_t index = backend.balancer().pick(worker.cursor(), endpoints.size());
  c.up = co_await acquire(worker, endpoints[index], c.backend().connect_timeout);
  if (!c.up.conn && endpoints.size() > 1) {
    // Nothing was sent: another endpoint is safe to try (nginx's proxy_next_upstream error).
    index = backend.balancer().pick(worker.cursor(), index);
    c.up = co_await acquire(worker, endpoints[index], c.backend().connect_timeout);
  }
  c.endpoint = &endpoints[index];
  out.endpoint = c.endpoint;
  if (!c.up.conn) {
    co_await fail(c, GatewayError::kUpstreamConnect);
    co_return out;
  }
  c.up.conn->mark_active(backend.metrics());
  const auto in_flight = backend.balancer().track(index);
  if (request.send_continue && !parser.is_done() && down_buffer.size() == 0) {
    down.expires_after(c.down_timeout());
    auto [ec, n] = co_await net::async_write(down, net::buffer(kContinue), kAsTuple);
    if (ec) {
      c.close_upstream();
      co_return out;
    }
  }
  c.bodyless = parser.is_done();
  const auto length = parser.content_length();
  const bool buffered = !c.bodyless && length && *length <= down_buffer.size();
  if (c.bodyless || buffered) {
    co_await sequential(c);
  } else {
    co_await duplex_exchange(c);
  }
  co_return out;
}

}  // namespace sluice::proxy
