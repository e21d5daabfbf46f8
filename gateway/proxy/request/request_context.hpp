// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/http1/gather_list.hpp"
#include "gateway/http1/head_rewrite.hpp"
#include "gateway/http1/message_parser.hpp"
#include "gateway/limiter/policy.hpp"
#include "gateway/proxy/request/errors.hpp"
#include "gateway/proxy/request/upstream_outcome.hpp"
#include "gateway/proxy/routing/rate_limit_fields.hpp"
#include "gateway/proxy/routing/snapshot.hpp"

namespace sluice::proxy {

/// What the exchange with the upstream did, for the outcome table, the log and the session.
struct ExchangeOutcome {
  unsigned status = 0;          ///< sent to the client; 0 when the response was cut or never sent
  std::uint64_t bytes_in = 0;   ///< request body bytes read from the client
  std::uint64_t bytes_out = 0;  ///< response body bytes written to the client
  std::optional<core::Duration> upstream_time;  ///< request sent -> response head received
  const UpstreamEndpoint* endpoint = nullptr;
  UpstreamResult upstream = UpstreamResult::kNotSent;
  unsigned upstream_status = 0;  ///< the upstream's status when a response head arrived
  /// Upstream attempts the request took: 0 when it never went upstream, more than 1 after
  /// retries (docs/endpoint-health.md "Retries").
  std::uint8_t attempts = 0;
  /// A gRPC call's status: the backend's `grpc-status` (trailers, or a trailers-only head), or
  /// the one the gateway answered with; -1 when none was seen (docs/grpc.md).
  int grpc_status = -1;
  /// The whole answer reached the client, framed so that the connection could carry another
  /// request (false: it was cut, or delimited by closing).
  bool answer_complete = false;
  /// Set when a `101` reached the client and the connection became a tunnel (docs/upgrades.md):
  /// from then on `bytes_in`/`bytes_out` count the tunnel's bytes each way.
  std::optional<core::TimePoint> tunnel_since;
};

/// The request id (docs/behaviour.md "Proxy hygiene"): the client's when it sent exactly one
/// usable id, else a fresh 32-hex-digit one. Inline: no allocation.
class RequestId {
 public:
  void keep(std::string_view client) noexcept {
    size_ = client.copy(text_.data(), text_.size());
    generated_ = false;
  }
  void generate() noexcept;
  [[nodiscard]] std::string_view view() const noexcept { return {text_.data(), size_}; }
  /// Fresh: sent upstream in place of whatever the client sent.
  [[nodiscard]] bool generated() const noexcept { return generated_; }

 private:
  std::array<char, 128> text_{};
  std::size_t size_ = 0;
  bool generated_ = false;
};

/// Everything one request carries from its head to its log line, in one object: the parsed
/// head (views into the session's read buffer), what routing and each step decided, the reply
/// fields, the admission, the outcome and the log record's own copies
/// (docs/architecture.md, "One request, one context"). The worker keeps a free list of them
/// (ContextPool), so a request allocates nothing once the pool is warm and an idle connection
/// holds none. Confined to the worker's thread; the snapshot it points to is kept alive by the
/// session for the request's duration.
struct RequestContext {
  /// Starts a new request at `now` on `snapshot`: every field back to its initial state.
  void reset(core::TimePoint now, const Snapshot& snap);

  // -- the request ------------------------------------------------------------------------
  core::TimePoint started{};
  /// The wall clock at the first byte, for the access log only (set when the log is on).
  std::chrono::system_clock::time_point wall{};
  const Snapshot* snapshot = nullptr;
  std::optional<http1::RequestParser> parser;  ///< a fresh one per request (emplaced by reset)
  [[nodiscard]] http1::RequestHead& head() noexcept { return parser->head(); }
  [[nodiscard]] const http1::RequestHead& head() const noexcept { return parser->head(); }
  std::string_view path;   ///< normalized path: routing, limits and the upstream all see it
  std::string_view query;  ///< "?..." as sent (empty when none)
  std::string path_scratch;
  std::string target_scratch;
  std::string_view upstream_target;  ///< path (prefix stripped) + query
  /// The host that routes the request and that the upstream receives in `Host`: the target's
  /// authority in absolute-form, else the Host field (empty when an HTTP/1.0 client sent none).
  std::string_view authority;
  /// The upstream's `Host` is `authority`, written anew (absolute-form, or no Host field); false:
  /// the client's Host field line is forwarded as it is.
  bool rewrite_host = false;
  RequestId request_id;
  bool client_keep_alive = false;  ///< what the client's version and Connection field ask
  /// The client asks to upgrade (HTTP/1.1, Upgrade listed in Connection, no body) and the route
  /// forwards upgrades: `Upgrade` goes up, and a `101` turns the connection into a tunnel.
  bool upgrade = false;
  /// The request is an HTTP/2 stream, read as HTTP/1.1 bytes (docs/http2.md): logged as HTTP/2.
  bool http2 = false;
  /// A gRPC call: an HTTP/2 request with `content-type: application/grpc*` (docs/grpc.md). The
  /// gateway's own answers to it are gRPC statuses.
  bool grpc = false;
  /// The call's `grpc-timeout`: it shortens the backend's response timeout, never lengthens it.
  std::optional<core::Duration> grpc_timeout;

  // -- routing and the steps --------------------------------------------------------------
  const Route* route = nullptr;
  const Backend* backend = nullptr;
  metrics::RouteMetrics* route_metrics = nullptr;  ///< the route's, or the unrouted series
  std::string_view user;  ///< the identity (views the head, the peer text or user_scratch)
  std::string user_scratch;
  /// The credential that named the user (docs/identity.md): the access log's `auth`, jwt |
  /// api_key | none. With jwt or api_key, `user_scratch` holds the verified user and `tier` the
  /// user's tier (empty: none), copied: the token cache may drop its entry meanwhile.
  std::string_view auth_label = "none";
  std::string tier;
  /// 401 only: the `reason` of the refusal and the `WWW-Authenticate` value.
  std::string_view auth_reason;
  std::array<char, 12> user_label{};  ///< the keyed hash of `user` for the log (12 hex digits)
  bool has_user_label = false;
  /// The keyed hash of `user` (the label's source), computed once for the log and the policy's
  /// heavy hitters (docs/operating.md "Heavy hitters").
  std::uint64_t user_hash = 0;
  bool has_user_hash = false;
  std::optional<limiter::Verdict> verdict;
  RateLimitFields rate_fields;
  std::array<http1::ExtraField, 2> extra{};
  std::size_t extra_count = 0;  ///< response fields to add (the rate-limit fields)
  std::optional<breaker::Admission> admission;
  /// The request's place under the backend's concurrency limit, when it has one.
  std::optional<breaker::ConcurrencySlot> concurrency_slot;
  /// pass | dropped | shadow_drop | overloaded | off
  std::string_view breaker_label = "off";

  // -- the answer -------------------------------------------------------------------------
  std::optional<GatewayError> error;  ///< the gateway answered itself
  std::string_view allow;             ///< 405: the methods the path accepts
  std::string allow_scratch;
  std::string location;  ///< 308: where the client is sent (`Location`), else empty
  unsigned retry_after_s = 0;
  std::string body_scratch;  ///< a reply body other than {"error": reason}
  std::string_view reply_body;
  ExchangeOutcome outcome;
  bool keep_alive = false;  ///< decided once (keep_alive.hpp) before the answer's head is written

  // -- log copies (only when the access log is on: the head's bytes may be gone by then) -------
  std::string log_method;
  std::string log_path;
  std::string log_host;
  std::string log_client;  ///< empty: the peer itself

  /// The upstream's response head and body framing (emplaced per response head read).
  std::optional<http1::ResponseParser> response;
  /// How much of the upstream connection's buffer `response` has parsed (head and body pieces
  /// gathered into `down_out`), consumed once they are written.
  std::size_t response_parsed = 0;

  /// The next write toward the upstream (the request head plus a small body), and toward the
  /// client (a response head plus a small body, or a gateway reply). Two, because in duplex mode
  /// both directions write at once.
  http1::GatherList up_out;
  http1::GatherList down_out;

  [[nodiscard]] std::span<const http1::ExtraField> extra_fields() const noexcept {
    return {extra.data(), extra_count};
  }
};

/// The worker's free list of contexts: acquire() at a request's first byte, release when it is
/// over. LIFO, so the context (and the capacity of its strings) is warm. Confined to one thread.
///
/// It keeps as many as were in use at once lately (docs/architecture.md, "One request, one
/// context"): a context given back is kept unless the pool already holds kMostKept, and trim()
/// (the worker's periodic sweep) frees those the last period's peak did not need. So a steady
/// load of N requests in flight (an HTTP/2 client's streams: hundreds per connection) makes
/// its contexts once rather than a 12 KiB allocation, zeroing and free for each request past a
/// fixed count, and a worker that went quiet gives them all back within two periods.
class ContextPool {
 public:
  class Lease {
   public:
    Lease(ContextPool& pool, std::unique_ptr<RequestContext> ctx) noexcept
        : pool_(&pool), ctx_(std::move(ctx)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&& other) noexcept = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (ctx_) {
        pool_->give_back(std::move(ctx_));
      }
    }
    [[nodiscard]] RequestContext& operator*() const noexcept { return *ctx_; }
    [[nodiscard]] RequestContext* operator->() const noexcept { return ctx_.get(); }

   private:
    ContextPool* pool_;
    std::unique_ptr<RequestContext> ctx_;
  };

  /// The most contexts kept free (about 12 MiB of them).
  static constexpr std::size_t kMostKept = 1024;

  [[nodiscard]] Lease acquire();
  /// Frees the kept contexts beyond what the most in use at once since the last trim needs
  /// beside those in use now, then starts a new period.
  void trim();
  [[nodiscard]] std::size_t idle() const noexcept { return free_.size(); }
  [[nodiscard]] std::size_t in_use() const noexcept { return in_use_; }

 private:
  void give_back(std::unique_ptr<RequestContext> ctx);
  std::vector<std::unique_ptr<RequestContext>> free_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;  ///< the most in use at once since the last trim()
};

}  // namespace sluice::proxy
