// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gateway/core/clock.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/proxy/steps/identify_step.hpp"

namespace sluice::proxy {

/// Step 5, record (docs/behaviour.md "Metrics" and "Logs"): once the answer is over, at `now`:
/// - the upstream result goes through the outcome table: `sluice_upstream_requests_total` and
///   the upstream latency, and the breaker window through `ctx.admission` (a request that never
///   reached the upstream leaves the window alone);
/// - the request is counted by route, backend and status with its duration (status 0, an
///   answer that never reached the client, counts as 499);
/// - with `log` (the access log is on), one access log line.
/// A tunnel (docs/upgrades.md) is recorded in two parts: its upstream result (the `101`, an
/// accept for the breaker) by record_tunnel_start() when it opens, the rest here when it ends,
/// with the request's duration counted up to the `101` and the log line's up to the end.
void record_step(RequestContext& ctx, core::TimePoint now, const Peer& peer,
                 log::AccessLog::Batch* log);

/// The upstream half of record_step() for a tunnel that just opened at `now`: the breaker
/// window and the upstream series see the `101` at once, not when the tunnel ends hours later.
void record_tunnel_start(RequestContext& ctx, core::TimePoint now);

/// Feeds one upstream attempt's result (`failed` by the breaker's failure definition) to the
/// backend's outlier detection (docs/endpoint-health.md "Outlier ejection"), and logs an
/// ejection it causes. record_step() does this for the request's last attempt; a retry does it
/// for the attempts before.
void note_endpoint_result(const Backend& backend, const UpstreamEndpoint& endpoint, bool failed,
                          core::TimePoint now);

/// Copies what the log line needs of the head (method, path, host, and the client address when
/// the peer is a trusted proxy) while the head's bytes are still there. Call right after
/// parsing, when the access log is on.
void keep_for_log(RequestContext& ctx, const Peer& peer);

}  // namespace sluice::proxy
