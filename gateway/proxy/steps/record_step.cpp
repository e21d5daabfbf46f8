// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/record_step.hpp"

#include "gateway/log/logging.hpp"
#include "gateway/proxy/steps/identity.hpp"
#include "gateway/proxy/steps/limit_step.hpp"

namespace sluice::proxy {

void note_endpoint_result(const Backend& backend, const UpstreamEndpoint& endpoint, bool failed,
                          core::TimePoint now) {
  const auto index = static_cast<std::size_t>(&endpoint - backend.endpoints().data());
  if (backend.health().record(index, failed, now)) {
    log::get("health")->warn(
        "endpoint ejected backend={} endpoint={} consecutive_failures={} (outlier detection)",
        backend.name(), endpoint.label, backend.config().outlier->consecutive_failures);
  }
}

namespace {

void record_upstream(RequestContext& ctx, core::TimePoint now) {
  const Backend& backend = *ctx.backend;
  const ExchangeOutcome& o = ctx.outcome;
  metrics::BackendMetrics& m = backend.metrics();
  if (o.upstream_time) {
    m.upstream_duration->Observe(std::chrono::duration<double>(*o.upstream_time).count());
  }
  const bool grpc_failure = ctx.grpc && backend.is_grpc_failure(o.grpc_status);
  const OutcomeRow row =
      classify(o.upstream, backend.is_failure(o.upstream_status) || grpc_failure);
  if (row.metric) {
    m.count(*row.metric);
  }
  if (o.attempts > 1 && row.breaker == BreakerRecord::kSuccess) {
    m.count(metrics::RetryResult::kSucceeded);  // the last attempt, a retry, got through
  }
  if (o.endpoint != nullptr && row.breaker != BreakerRecord::kNothing) {
    note_endpoint_result(backend, *o.endpoint, row.breaker == BreakerRecord::kFailure, now);
  }
  if (ctx.concurrency_slot) {
    // Only an accepted response says how long the backend takes; a slow one above all.
    if (row.breaker == BreakerRecord::kSuccess && o.upstream_time) {
      std::move(*ctx.concurrency_slot).measured(*o.upstream_time, now);
    }
    ctx.concurrency_slot.reset();
  }
  if (!ctx.admission) {
    return;
  }
  BreakerRecord breaker = row.breaker;
  if (breaker == BreakerRecord::kSuccess && o.upstream_time &&
      backend.slow_call() > core::Duration::zero() && *o.upstream_time > backend.slow_call()) {
    m.slow_calls->Increment();  // breaker.slow_ms: a slow answer is a failure to the breaker
    breaker = BreakerRecord::kFailure;
  }
  switch (breaker) {
    case BreakerRecord::kNothing:
      std::move(*ctx.admission).abandon();
      break;
    case BreakerRecord::kSuccess:
      std::move(*ctx.admission).succeeded(now);
      break;
    case BreakerRecord::kFailure:
      std::move(*ctx.admission).failed(now);
      break;
  }
  ctx.admission.reset();
}

std::string_view protocol(const RequestContext& ctx) {
  if (ctx.http2) {
    return "HTTP/2";
  }
  return ctx.parser && ctx.parser->got_some() && ctx.head().version == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

}  // namespace

void keep_for_log(RequestContext& ctx, const Peer& peer) {
  const http1::RequestHead& head = ctx.head();
  ctx.log_method.assign(head.method);
  // The path as sent; accept_head() replaces it with the normalized one once it is known.
  const std::string_view target = head.target;
  ctx.log_path.assign(target.substr(0, target.find_first_of("?#")));
  ctx.log_host.assign(head.fields.value(boost::beast::http::field::host));
  const auto& trusted = ctx.snapshot->config().http.trusted_proxies;
  if (is_trusted(peer.address, trusted)) {  // the client is behind a proxy we believe
    ctx.log_client = forwarded_address(client_ip(head.fields, peer.address, trusted));
  }
}

void record_tunnel_start(RequestContext& ctx, core::TimePoint now) {
  ctx.outcome.tunnel_since = now;
  if (ctx.backend != nullptr) {
    record_upstream(ctx, now);
  }
}

void record_step(RequestContext& ctx, core::TimePoint now, const Peer& peer,
                 log::AccessLog::Batch* log) {
  const auto elapsed = now - ctx.started;
  if (ctx.outcome.tunnel_since) {  // its upstream half was recorded when it opened
    ctx.route_metrics->record(
        ctx.outcome.status,
        std::chrono::duration<double>(*ctx.outcome.tunnel_since - ctx.started).count());
  } else {
    if (ctx.backend != nullptr) {
      record_upstream(ctx, now);
    }
    ctx.route_metrics->record(ctx.outcome.status, std::chrono::duration<double>(elapsed).count());
  }
  if (ctx.grpc && ctx.route != nullptr) {
    // A call whose answer carried no status (cut, or a backend that is no gRPC server) is
    // UNKNOWN, as the gRPC client reports it.
    ctx.route_metrics->grpc().count(ctx.outcome.grpc_status >= 0 ? ctx.outcome.grpc_status : 2);
  }
  if (log == nullptr) {
    return;
  }
  log::AccessRecord r;
  r.ts = ctx.wall;
  r.request_id = ctx.request_id.view();
  r.method = ctx.log_method.empty() ? std::string_view("-") : std::string_view(ctx.log_method);
  r.path = ctx.log_path.empty() ? std::string_view("-") : std::string_view(ctx.log_path);
  r.route = ctx.route != nullptr ? std::string_view(ctx.route->name) : "none";
  r.backend = ctx.backend != nullptr ? std::string_view(ctx.backend->name()) : "none";
  r.endpoint =
      ctx.outcome.endpoint != nullptr ? std::string_view(ctx.outcome.endpoint->label) : "-";
  if (ctx.has_user_label) {
    r.user = std::string_view(ctx.user_label.data(), ctx.user_label.size());
  }
  r.status = ctx.outcome.status;
  r.bytes_in = ctx.outcome.bytes_in;
  r.bytes_out = ctx.outcome.bytes_out;
  r.duration_ms = std::chrono::duration<double, std::milli>(elapsed).count();
  if (ctx.outcome.upstream_time) {
    r.upstream_ms = std::chrono::duration<double, std::milli>(*ctx.outcome.upstream_time).count();
  }
  r.attempts = ctx.outcome.attempts;
  r.limit = limit_label(ctx.verdict);
  r.breaker = ctx.breaker_label;
  r.client_ip = ctx.log_client.empty() ? std::string_view(peer.text) : ctx.log_client;
  r.host = ctx.log_host;
  r.protocol = protocol(ctx);
  r.listener = peer.listener;
  r.auth = ctx.auth_label;
  r.tier = ctx.tier;
  if (ctx.grpc) {
    r.grpc_status = ctx.outcome.grpc_status;
  }
  log->write(r);
}

}  // namespace sluice::proxy
