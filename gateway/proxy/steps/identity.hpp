// SPDX-License-Identifier: Apache-2.0
// Who a request is rate-limited as (docs/behaviour.md "Who is the user"). Stateless
// functions: thread-safe; they throw nothing but std::bad_alloc.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <span>
#include <string>
#include <string_view>

#include "gateway/config/config.hpp"
#include "gateway/http1/field_list.hpp"
#include "gateway/tls/client_certificate.hpp"

namespace sluice::proxy {

/// True when `peer` lies in one of the trusted proxy networks.
[[nodiscard]] bool is_trusted(const boost::asio::ip::address& peer,
                              std::span<const config::Cidr> trusted) noexcept;

/// The address as it appears in X-Forwarded-For and logs (IPv4-mapped IPv6 shown as IPv4).
[[nodiscard]] std::string forwarded_address(const boost::asio::ip::address& peer);

/// The first `name` field's value, trimmed; empty when absent.
[[nodiscard]] std::string_view header_value(const http1::FieldList& fields, std::string_view name);

/// The token of `Authorization: Bearer TOKEN` (RFC 6750 §2.1: the scheme is case-insensitive and
/// followed by at least one space); empty for any other scheme.
[[nodiscard]] std::string_view bearer_token(const http1::FieldList& fields);

/// Who a request is rate-limited as (docs/behaviour.md "Who is the user"): the value of the first
/// identity source that yields one, in config order:
/// - {"header": NAME}: that header's value (first occurrence, surrounding whitespace trimmed;
///   empty = no value);
/// - {"bearer": true}: the token of `Authorization: Bearer TOKEN` (scheme case-insensitive,
///   token trimmed; other schemes or an empty token = no value);
/// - {"client_cert": NAME}: that name (subject_cn, san_dns, san_uri) of the client's verified
///   certificate (`cert`; empty = no value);
/// - {"client_ip": true}: client_ip() as text (IPv4-mapped IPv6 shown as IPv4, as
///   forwarded_address() does); `peer_text` when that is the peer itself;
/// - {"jwt": true}, {"api_key": true}: nothing here (auth_step() verifies them and sets the
///   user before identify_step() runs).
/// If no source yields a value, falls back to the client IP, so omitting a credential never
/// escapes a limit. Call it before the gateway appends the peer to X-Forwarded-For.
/// The result views `fields`, `cert`, `peer_text` (forwarded_address(peer), which the caller
/// computes once per connection) or `scratch`: it is valid while they live unchanged.
/// Allocation-free unless the client IP comes from X-Forwarded-For.
[[nodiscard]] std::string_view identify(
    const http1::FieldList& fields, std::span<const config::IdentitySource> sources,
    const tls::ClientCertificate& cert, const boost::asio::ip::address& peer,
    std::string_view peer_text, std::span<const config::Cidr> trusted, std::string& scratch);

/// The client address (docs/behaviour.md "Who is the user"): the peer itself unless the peer is in
/// `trusted`; then the rightmost X-Forwarded-For address that is not trusted (all X-Forwarded-For
/// fields joined in order, comma-separated, entries trimmed). If every listed address is trusted,
/// the leftmost one. An entry that is not a plain IP literal (a port, brackets, a zone id, an empty
/// entry or field) stops the walk: the address of the hop that reported it (the entry to its right,
/// or the peer) is used, so garbage can never become a key. Allocation-free for IPv4 entries.
[[nodiscard]] boost::asio::ip::address client_ip(const http1::FieldList& fields,
                                                 const boost::asio::ip::address& peer,
                                                 std::span<const config::Cidr> trusted);

}  // namespace sluice::proxy
