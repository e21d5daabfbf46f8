// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "gateway/http1/gather_list.hpp"
#include "gateway/http1/message_head.hpp"

// Proxy hygiene in one place (docs/behaviour.md "Proxy hygiene"): what changes between a
// client's head and the head the upstream receives, and back. A head is forwarded as its
// original bytes with targeted edits: the first line is written anew, the field lines that stay
// are copied as runs of original bytes, removed fields leave holes, and added fields follow. The
// result goes into a GatherList (views, no copy of the original bytes). Pure functions.
namespace sluice::http1 {

/// A field the gateway adds to a response (the rate-limit fields).
struct ExtraField {
  std::string_view name;
  std::string_view value;
};

/// True for fields that are hop-by-hop by name (RFC 9110 §7.6.1): Connection, Keep-Alive, TE,
/// Trailer, Upgrade, Proxy-* (plus, per message, the fields Connection names).
[[nodiscard]] bool hop_by_hop_by_name(const FieldRef& f) noexcept;

/// How the upstream request differs from the client's.
struct RequestRewrite {
  std::string_view target;  ///< the request-target to send (normalized, prefix stripped)
  /// True: every client Host field is dropped and `Host: host` is added (an absolute-form
  /// target's authority, or empty for an HTTP/1.0 request that had none). False: the client's
  /// Host line is forwarded as it is.
  bool replace_host = false;
  std::string_view host;
  std::string_view client_address;  ///< appended to X-Forwarded-For
  /// The peer is a trusted proxy: an X-Forwarded-Proto it sent is kept; otherwise it is
  /// replaced by `proto`.
  bool peer_trusted = false;
  std::string_view proto = "http";
  /// X-Forwarded-Host to add (the client's Host); empty: none. From a trusted peer, an
  /// X-Forwarded-Host it sent is kept instead.
  std::string_view forwarded_host;
  /// An upgrade is forwarded (docs/upgrades.md): the client's Upgrade field stays, and
  /// `Connection: Upgrade` is added. False: Upgrade is removed like every hop-by-hop field.
  bool upgrade = false;
  /// Non-empty: every client X-Request-Id is replaced by this one (the client sent none, or
  /// none usable). Empty: the client's (single, usable) id is forwarded as it is.
  std::string_view request_id;
  /// Fields removed by name (case-insensitive): a route's `strip_credentials`.
  std::span<const std::string_view> strip;
};

/// The upstream request head: `METHOD target HTTP/1.1`, then the client's fields without the
/// hop-by-hop ones, Expect (the gateway answers 100-continue itself), X-Forwarded-For (merged
/// into one added field: every value the client sent, in order, then `client_address`),
/// X-Forwarded-Proto and X-Forwarded-Host (unless kept, see above), X-Request-Id (when replaced)
/// and Host (when replaced); with `upgrade`, Upgrade stays and `Connection: Upgrade` is added.
/// Framing fields stay; Content-Length sent as a list of equal values or several times is collapsed
/// into one field. The views in `out` point into `head` and `rewrite`, which must outlive the
/// write.
void write_request_head(const RequestHead& head, const RequestRewrite& rewrite, GatherList& out);

/// How the body of a response is re-framed for the client.
enum class BodyFraming {
  kAsIs,     ///< Content-Length or chunked, passed through (also: no body)
  kChunked,  ///< the upstream delimits by closing: chunk it for an HTTP/1.1 client
  kUnchunk,  ///< chunked upstream, HTTP/1.0 client: sent plain, delimited by closing
};

/// How the client's response differs from the upstream's.
struct ResponseRewrite {
  unsigned version = 11;  ///< toward the client: 10 or 11
  /// Whether the client connection stays open: `Connection: close` on HTTP/1.1 when false,
  /// `Connection: keep-alive` on HTTP/1.0 when true.
  bool keep_alive = true;
  BodyFraming framing = BodyFraming::kAsIs;
  std::string_view request_id;        ///< added when the response carries no X-Request-Id
  std::span<const ExtraField> extra;  ///< added, replacing response fields of the same name
  /// A `101 Switching Protocols` that starts a tunnel: the upstream's Upgrade field stays and
  /// `Connection: Upgrade` is sent (keep_alive is not looked at).
  bool upgrade = false;
};

/// The client's response head: the status line in the client's version with the upstream's
/// status and reason, the upstream's fields without the hop-by-hop ones (and without a
/// Transfer-Encoding being removed by kUnchunk), then the added fields.
void write_response_head(const ResponseHead& head, const ResponseRewrite& rewrite, GatherList& out);

/// Receives one field: a name and a value that live through the call.
using FieldSink = std::function<void(std::string_view name, std::string_view value)>;

/// The fields write_response_head() writes, handed to `sink` one by one instead of as text, for
/// a client whose protocol carries fields rather than lines (HTTP/2, docs/http2.md "One stream,
/// one HTTP/1.1 request"): the same upstream fields kept, a collapsed Content-Length, the added
/// X-Request-Id and extra fields, and no Connection field of sluice's own. Returns false, having
/// sent nothing, when the head needs more than fields (a Transfer-Encoding line: the body is
/// framed as text; an upgrade; a re-framed body).
[[nodiscard]] bool for_each_response_field(const ResponseHead& head, const ResponseRewrite& rw,
                                           const FieldSink& sink);

/// True when `id` may be forwarded as a request id: 1-128 visible ASCII characters.
[[nodiscard]] bool usable_request_id(std::string_view id) noexcept;

}  // namespace sluice::http1
