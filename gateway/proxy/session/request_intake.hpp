// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>
#include <optional>
#include <string_view>

#include "gateway/http1/request_target.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/proxy/request/errors.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/proxy/routing/router.hpp"
#include "gateway/proxy/session/session_env.hpp"
#include "gateway/proxy/steps/identify_step.hpp"

// A request from the bytes of its head to the decision to forward it (docs/architecture.md,
// "The request path", steps 2-5): parse, accept (request id, framing, path, route, identity),
// then limit and breaker. Plain functions, no waiting: the session (server_session.hpp) awaits
// only what must be awaited. All run on the worker's thread.
namespace sluice::proxy {

/// The bytes of `buffer` as text.
inline std::string_view buffered(const boost::beast::flat_buffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

/// The head's parse, with the parser's limits from the config. Returns the answer on failure.
[[nodiscard]] std::optional<GatewayError> parse_head(RequestContext& ctx,
                                                     std::string_view head_bytes);

/// The request's authority (docs/http-conformance.md, "Host"): exactly one valid Host on
/// HTTP/1.1 (at most one on HTTP/1.0), and the host that routes and goes upstream: the
/// absolute-form target's authority, else the Host field. Sets `ctx.authority` and
/// `ctx.rewrite_host`; returns the answer when the head breaks the rules.
[[nodiscard]] std::optional<GatewayError> settle_authority(RequestContext& ctx,
                                                           const http1::RequestTarget& target);

/// Routing: the target's form and the authority, the normalized path, the route, and the target
/// the upstream will get (origin-form, or `*` for a routed `OPTIONS *`). CONNECT is 501.
[[nodiscard]] std::optional<GatewayError> route_request(RequestContext& ctx);

/// A plain listener's `redirect_to_https` (docs/tls.md): a valid head is answered 308 with
/// `Location: https://HOST[:PORT]TARGET` (PORT omitted when 443; an absolute-form target by its
/// authority, path and query). Returns the answer: kRedirectToHttps, or 400 for a broken head.
[[nodiscard]] GatewayError redirect_to_https(RequestContext& ctx, std::uint16_t port);

/// After the head is parsed: the request id, the log's copies, framing checks and routing.
/// Returns the answer when the request goes no further.
[[nodiscard]] std::optional<GatewayError> accept_head(RequestContext& ctx, const SessionEnv& env,
                                                      const Peer& peer);

/// The steps of a parsed request that need no waiting: accept the head (request id, routing,
/// identity), then the limit and the breaker. Returns the answer when the request goes no
/// further; `await_store` is set when the store must be asked asynchronously (the session
/// awaits it, then calls after_limit()).
[[nodiscard]] std::optional<GatewayError> judge(RequestContext& ctx, const SessionEnv& env,
                                                const Peer& peer, bool& await_store);

/// The rest of judge() once an asynchronous limit decision arrived.
/// `env`: the session's, as judge() had it.
[[nodiscard]] std::optional<GatewayError> after_limit(RequestContext& ctx,
                                                      const limiter::LimitDecision& decision,
                                                      const SessionEnv& env);

/// Starts a request on `ctx` (a pooled context) under `snapshot`: its clocks. Returns `ctx`.
RequestContext& begin_request(RequestContext& ctx, const Snapshot& snapshot, const SessionEnv& env);

/// parse_head(), then judge(): every step before the exchange that needs no waiting.
[[nodiscard]] std::optional<GatewayError> intake(RequestContext& ctx, std::string_view head_bytes,
                                                 const SessionEnv& env, const Peer& peer,
                                                 bool& await_store);

/// Prepares the gateway's own answer to `error` in `ctx.down_out` (the reply and its keep-alive
/// verdict), consuming the request from `buffer` when it can. Returns whether the request was
/// read whole (otherwise the connection must close, lingering).
bool prepare_answer(RequestContext& ctx, boost::beast::flat_buffer& buffer, const SessionEnv& env,
                    GatewayError error);

}  // namespace sluice::proxy
