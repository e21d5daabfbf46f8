// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/session/request_intake.hpp"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cstdint>
#include <limits>

#include "gateway/http1/path_normalizer.hpp"
#include "gateway/http1/request_target.hpp"
#include "gateway/proxy/request/grpc_call.hpp"
#include "gateway/proxy/request/keep_alive.hpp"
#include "gateway/proxy/request/reply.hpp"
#include "gateway/proxy/steps/auth_step.hpp"
#include "gateway/proxy/steps/breaker_step.hpp"
#include "gateway/proxy/steps/identity.hpp"
#include "gateway/proxy/steps/limit_step.hpp"
#include "gateway/proxy/steps/record_step.hpp"

namespace sluice::proxy {
namespace {

GatewayError parse_failure(boost::system::error_code ec) {
  namespace http = boost::beast::http;
  if (ec == http::error::header_limit) {
    return GatewayError::kHeaderTooLarge;
  }
  if (ec == http::error::body_limit) {
    return GatewayError::kPayloadTooLarge;  // a Content-Length above max_body_bytes
  }
  return GatewayError::kBadRequest;
}

/// Consumes the request's head, and its body when the body is entirely in `buffer` (a small
/// POST that gets a 404, 405 or 429), so the connection can carry the next request. False when
/// the body is not all there (the connection must close).
bool consume_request(RequestContext& ctx, beast::flat_buffer& buffer) {
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

/// An HTTP/1.1 request that asks to switch protocols (RFC 9110 §7.8): an Upgrade field, the
/// `upgrade` token in Connection, and no body (a request with a body is forwarded without its
/// upgrade: docs/upgrades.md).
bool asks_upgrade(const http1::RequestHead& head) {
  namespace http = boost::beast::http;
  if (head.version < 11 || head.framing != http1::Framing::kNone ||
      head.verb == http::verb::connect) {
    return false;
  }
  bool upgrade_field = false;
  bool connection_token = false;
  for (std::size_t i = 0; i < head.fields.size(); ++i) {
    const http1::FieldRef& f = head.fields[i];
    if (f.id == http::field::upgrade) {
      upgrade_field = upgrade_field || !f.value.empty();
    } else if (f.id == http::field::connection) {
      connection_token = connection_token || http::token_list(f.value).exists("upgrade");
    }
  }
  return upgrade_field && connection_token;
}

/// Keeps the client's X-Request-Id or makes one (`http.request_id`, docs/behaviour.md "Request
/// ids"): preserve keeps a usable one, trusted only from a trusted proxy, replace never.
void settle_request_id(RequestContext& ctx, const Peer& peer) {
  const config::HttpConfig& http = ctx.snapshot->config().http;
  const http1::RequestHead& head = ctx.head();
  const http1::FieldRef* id = http.request_id == config::RequestIdPolicy::kReplace
                                  ? nullptr
                                  : head.fields.find("X-Request-Id");
  if (id != nullptr && http1::usable_request_id(id->value) &&
      head.fields.count("X-Request-Id") == 1 &&
      (http.request_id == config::RequestIdPolicy::kPreserve ||
       is_trusted(peer.address, http.trusted_proxies))) {
    ctx.request_id.keep(id->value);
  } else {
    ctx.request_id.generate();
  }
}

}  // namespace

std::optional<GatewayError> parse_head(RequestContext& ctx, std::string_view head_bytes) {
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

std::optional<GatewayError> settle_authority(RequestContext& ctx,
                                             const http1::RequestTarget& target) {
  const http1::RequestHead& head = ctx.head();
  const http1::FieldRef* host = nullptr;
  for (std::size_t i = 0; i < head.fields.size(); ++i) {
    if (head.fields[i].id == boost::beast::http::field::host) {
      if (host != nullptr) {
        return GatewayError::kBadRequest;  // more than one Host line
      }
      host = &head.fields[i];
    }
  }
  if (host == nullptr ? head.version >= 11 : !http1::valid_host(host->value)) {
    return GatewayError::kBadRequest;  // HTTP/1.1 needs one; any sent must be valid
  }
  if (target.form == http1::TargetForm::kAbsolute) {
    ctx.authority = target.authority;  // the target's authority wins over Host (RFC 9112 §3.2.2)
    ctx.rewrite_host = true;
  } else if (host != nullptr) {
    ctx.authority = host->value;
  } else {
    ctx.rewrite_host = true;  // an HTTP/1.0 client without Host: the upstream gets `Host:` empty
  }
  return std::nullopt;
}

std::optional<GatewayError> route_asterisk(RequestContext& ctx) {
  if (ctx.head().verb != boost::beast::http::verb::options) {
    return GatewayError::kBadRequest;  // asterisk-form is for OPTIONS only
  }
  ctx.path = "*";
  const Route* route = ctx.snapshot->router().match_asterisk(ctx.authority);
  if (route == nullptr) {
    return GatewayError::kNoRoute;
  }
  ctx.route = route;
  ctx.upstream_target = "*";
  return std::nullopt;
}

std::optional<GatewayError> route_request(RequestContext& ctx) {
  const http1::RequestHead& head = ctx.head();
  const config::HttpConfig& http = ctx.snapshot->config().http;
  if (head.verb == boost::beast::http::verb::connect) {
    // Its authority-form target is no path to route; a broken head is still 400 first.
    return settle_authority(ctx, http1::RequestTarget{}).value_or(GatewayError::kNotImplemented);
  }
  const auto target = http1::parse_request_target(head.target);
  if (!target) {
    return GatewayError::kBadRequest;
  }
  if (auto refused = settle_authority(ctx, *target)) {
    return refused;
  }
  if (target->form == http1::TargetForm::kAsterisk) {
    if (auto refused = route_asterisk(ctx)) {
      return refused;
    }
  } else {
    const std::string_view raw_path = target->path.empty() ? "/" : target->path;
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
    ctx.query = target->query;
    const RouteMatch match = ctx.snapshot->router().match(ctx.authority, head.method, ctx.path);
    if (match.kind == RouteMatch::Kind::kNoRoute) {
      return GatewayError::kNoRoute;
    }
    if (match.kind == RouteMatch::Kind::kMethodNotAllowed) {
      ctx.allow_scratch = match.allow;
      ctx.allow = ctx.allow_scratch;
      return GatewayError::kMethodNotAllowed;
    }
    ctx.route = match.route;
    if (target->form == http1::TargetForm::kOrigin && ctx.path.data() == raw_path.data() &&
        !ctx.route->strip_prefix) {
      ctx.upstream_target = head.target;  // nothing to change: the client's bytes
    } else {
      // (an absolute-form target is forwarded in origin form, by its normalized path)
      ctx.upstream_target = upstream_target(*ctx.route, ctx.path, ctx.query, ctx.target_scratch);
    }
  }
  ctx.backend = &ctx.snapshot->backend(ctx.route->backend);
  ctx.route_metrics = ctx.route->metrics;
  ctx.upgrade = ctx.route->upgrades && asks_upgrade(head);
  return std::nullopt;
}

GatewayError redirect_to_https(RequestContext& ctx, std::uint16_t port) {
  const http1::RequestHead& head = ctx.head();
  const auto target = http1::parse_request_target(head.target);
  if (!target || target->form == http1::TargetForm::kAsterisk) {
    return GatewayError::kBadRequest;  // (CONNECT's authority-form too: nothing to redirect to)
  }
  if (auto refused = settle_authority(ctx, *target)) {
    return *refused;
  }
  if (ctx.authority.empty()) {
    return GatewayError::kBadRequest;  // an HTTP/1.0 request without Host: no host to name
  }
  // The host without its port: `[v6]:port` keeps its brackets.
  std::string_view host = ctx.authority;
  const auto colon = host.rfind(':');
  if (colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos) {
    host = host.substr(0, colon);
  }
  ctx.location.assign("https://").append(host);
  if (port != 443) {
    ctx.location.append(":").append(std::to_string(port));
  }
  if (target->form == http1::TargetForm::kOrigin) {
    ctx.location.append(head.target);
  } else {
    ctx.location.append(target->path.empty() ? "/" : target->path).append(target->query);
  }
  return GatewayError::kRedirectToHttps;
}

std::optional<GatewayError> accept_head(RequestContext& ctx, const SessionEnv& env,
                                        const Peer& peer) {
  const http1::RequestHead& head = ctx.head();
  ctx.client_keep_alive = head.keep_alive;
  settle_request_id(ctx, peer);
  if (ctx.http2) {
    read_grpc_fields(ctx);
  }
  if (env.access_log != nullptr) {
    keep_for_log(ctx, peer);
  }
  const std::optional<GatewayError> refused =
      peer.redirect_to_port ? redirect_to_https(ctx, *peer.redirect_to_port) : route_request(ctx);
  if (env.access_log != nullptr && !ctx.path.empty()) {
    ctx.log_path.assign(ctx.path);       // the log shows the path and host that were judged and
    ctx.log_host.assign(ctx.authority);  // forwarded
  }
  if (refused) {
    return refused;
  }
  if (auto unauthorized = auth_step(ctx, peer, env.auth)) {
    return unauthorized;
  }
  identify_step(ctx, peer, &env.services.user_hash, env.access_log != nullptr);
  return std::nullopt;
}

std::optional<GatewayError> judge(RequestContext& ctx, const SessionEnv& env, const Peer& peer,
                                  bool& await_store) {
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
    if (auto refused = apply_limit(ctx, *limit, *decision, env.top_users)) {
      return refused;
    }
  }
  return breaker_step(ctx, ctx.started);
}

std::optional<GatewayError> after_limit(RequestContext& ctx, const limiter::LimitDecision& decision,
                                        const SessionEnv& env) {
  if (auto refused = apply_limit(ctx, *route_limit(ctx), decision, env.top_users)) {
    return refused;
  }
  return breaker_step(ctx, ctx.started);
}

RequestContext& begin_request(RequestContext& ctx, const Snapshot& snapshot,
                              const SessionEnv& env) {
  ctx.reset(env.services.clock.now(), snapshot);
  if (env.access_log != nullptr) {
    ctx.wall = std::chrono::system_clock::now();
  }
  return ctx;
}

std::optional<GatewayError> intake(RequestContext& ctx, std::string_view head_bytes,
                                   const SessionEnv& env, const Peer& peer, bool& await_store) {
  await_store = false;
  if (auto refused = parse_head(ctx, head_bytes)) {
    return refused;
  }
  return judge(ctx, env, peer, await_store);
}

bool prepare_answer(RequestContext& ctx, boost::beast::flat_buffer& buffer, const SessionEnv& env,
                    GatewayError error) {
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
  return request_read;
}

}  // namespace sluice::proxy
