// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "gateway/core/keyed_hash.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/tls/client_certificate.hpp"

namespace sluice::proxy {

/// The client end of a connection: its address, and that address as text (computed once per
/// connection for X-Forwarded-For, identities and logs).
struct Peer {
  boost::asio::ip::address address;
  std::string text;
  /// The name of the listener the connection arrived on (`listeners[].name`): the access log's
  /// `listener`. Views the config the gateway started with (listeners need a restart).
  std::string_view listener = "default";
  bool tls = false;  ///< it arrived over TLS: the upstream gets `X-Forwarded-Proto: https`
  /// Set on a plain listener with `redirect_to_https`: every request is answered 308 to this
  /// port (the first TLS listener's) instead of being served.
  std::optional<std::uint16_t> redirect_to_port = std::nullopt;
  /// The names of the client's verified certificate (a TLS listener with client_ca), for the
  /// `client_cert` identity source; empty otherwise.
  tls::ClientCertificate client_cert = {};
};

/// Step 1, identify (docs/behaviour.md "Who is the user"): sets `ctx.user` from the
/// snapshot's identity sources (header, bearer token, client IP through trusted proxies). When
/// `hash` is given, the keyed hash of the user (never the credential) goes to `ctx.user_hash`,
/// once, if the log labels users (`log_label`: the access log is on; then `ctx.user_label`, 12
/// hex digits of it, too) or the route's policy counts its heavy hitters. Does nothing when
/// neither the route's limit nor the log needs the user. Needs the route.
void identify_step(RequestContext& ctx, const Peer& peer, const core::KeyedHash* hash,
                   bool log_label = true);

/// The first 12 hex digits of `hash(user)`.
[[nodiscard]] std::array<char, 12> user_label(const core::KeyedHash& hash, std::string_view user);

}  // namespace sluice::proxy
