// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/fields.hpp>
#include <span>
#include <string>
#include <string_view>

#include "gateway/config/config.hpp"

namespace sluice::proxy {

// Proxy hygiene (SPEC §4), in one place: what changes between the client's message and the
// upstream's, and back. Stateless functions; thread-safe.

/// Removes hop-by-hop fields: `Connection` and the fields it names, `Keep-Alive`, `TE`,
/// `Trailer`, `Upgrade`, and every `Proxy-*`. Framing (`Content-Length`,
/// `Transfer-Encoding`) and `Host` stay even when `Connection` names them: the serializer
/// re-frames the body, and a client must not be able to strip them through `Connection`.
void strip_hop_by_hop(boost::beast::http::fields& fields);

/// True when `peer` lies in one of the trusted proxy networks.
[[nodiscard]] bool is_trusted(const boost::asio::ip::address& peer,
                              std::span<const config::Cidr> trusted) noexcept;

/// The address as it appears in X-Forwarded-For (IPv4-mapped IPv6 shown as IPv4).
[[nodiscard]] std::string forwarded_address(const boost::asio::ip::address& peer);

/// Prepares a request for the upstream: hop-by-hop fields removed, the peer appended to
/// `X-Forwarded-For` (merging repeated fields), `X-Forwarded-Proto` kept from a trusted peer or
/// set to `http`, `Expect` removed (the gateway answers `100 Continue` itself). `Host` is left as
/// the client sent it. Returns nothing; the request id is handled by ensure_request_id().
void prepare_upstream_request(boost::beast::http::fields& fields,
                              const boost::asio::ip::address& peer, bool peer_trusted);

/// Keeps a usable client `X-Request-Id` (1-128 visible ASCII characters) or replaces it with a
/// fresh random one; returns the id.
std::string ensure_request_id(boost::beast::http::fields& fields);

/// A random 128-bit id as 32 hex digits (a per-thread generator; thread-safe).
[[nodiscard]] std::string make_request_id();

}  // namespace sluice::proxy
