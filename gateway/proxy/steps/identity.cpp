// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/identity.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <charconv>
#include <optional>

#include "gateway/config/endpoint.hpp"

namespace sluice::proxy {
namespace {

using boost::asio::ip::address;
using Kind = config::IdentitySource::Kind;

constexpr std::string_view kWhitespace = " \t";  // OWS (RFC 9110 §5.6.3)
constexpr std::string_view kForwardedFor = "X-Forwarded-For";

std::string_view trim(std::string_view s) noexcept {
  const auto first = s.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = s.find_last_not_of(kWhitespace);
  return s.substr(first, last - first + 1);
}

}  // namespace

std::string_view header_value(const http1::FieldList& fields, std::string_view name) {
  const http1::FieldRef* f = fields.find(name);
  return f == nullptr ? std::string_view{} : trim(f->value);
}

std::string_view bearer_token(const http1::FieldList& fields) {
  constexpr std::string_view kScheme = "bearer";
  const http1::FieldRef* f = fields.find(boost::beast::http::field::authorization);
  const std::string_view value = f == nullptr ? std::string_view{} : trim(f->value);
  if (value.size() <= kScheme.size() ||
      !boost::beast::iequals(value.substr(0, kScheme.size()), kScheme) ||
      kWhitespace.find(value[kScheme.size()]) == std::string_view::npos) {
    return {};
  }
  return trim(value.substr(kScheme.size()));  // not empty: `value` ends in non-whitespace
}

namespace {

/// What a non-client-ip source yields; empty = nothing.
std::string_view source_value(const http1::FieldList& fields, const tls::ClientCertificate& cert,
                              const config::IdentitySource& source) {
  using CertName = config::IdentitySource::CertName;
  switch (source.kind) {
    case Kind::kClientCert:
      return source.cert_name == CertName::kSubjectCn ? std::string_view(cert.subject_cn)
             : source.cert_name == CertName::kSanDns  ? std::string_view(cert.san_dns)
                                                      : std::string_view(cert.san_uri);
    case Kind::kHeader:
      return header_value(fields, source.header);
    case Kind::kBearer:
      return bearer_token(fields);
    case Kind::kClientIp:
    case Kind::kJwt:  // verified by auth_step, never taken on the client's word
    case Kind::kApiKey:
      break;
  }
  return {};
}

/// Calls `visit(entry)` on each X-Forwarded-For entry, trimmed, from the rightmost (the last
/// entry of the last field) leftwards, while it returns true. Entries view `fields`: no copies.
template <typename Visit>
void visit_forwarded_right_to_left(const http1::FieldList& fields, Visit visit) {
  for (std::size_t i = fields.size(); i-- > 0;) {
    if (!boost::beast::iequals(fields[i].name, kForwardedFor)) {
      continue;
    }
    std::string_view rest = fields[i].value;
    for (;;) {
      const auto comma = rest.rfind(',');
      const bool leftmost = comma == std::string_view::npos;
      if (!visit(trim(leftmost ? rest : rest.substr(comma + 1)))) {
        return;
      }
      if (leftmost) {
        break;
      }
      rest = rest.substr(0, comma);
    }
  }
}

}  // namespace

bool is_trusted(const address& peer, std::span<const config::Cidr> trusted) noexcept {
  return std::any_of(trusted.begin(), trusted.end(),
                     [&](const config::Cidr& c) { return c.contains(peer); });
}

std::string forwarded_address(const address& peer) {
  boost::asio::ip::address_v4 v4;
  if (peer.is_v4()) {
    v4 = peer.to_v4();
  } else if (peer.to_v6().is_v4_mapped()) {
    v4 = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, peer.to_v6());
  } else {
    return peer.to_string();
  }
  // Dotted decimal by hand, as inet_ntop writes it: Asio's to_string() goes through inet_ntop
  // and sprintf, about 1,700 instructions, and an address from X-Forwarded-For is formatted
  // for every request that is keyed by it (a flood shed by the failure ledger among them).
  const auto bytes = v4.to_bytes();
  std::array<char, 15> text{};  // "255.255.255.255"
  char* at = text.data();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) {
      *at++ = '.';
    }
    at = std::to_chars(at, text.data() + text.size(), bytes[i]).ptr;
  }
  return {text.data(), static_cast<std::size_t>(at - text.data())};
}

address client_ip(const http1::FieldList& fields, const address& peer,
                  std::span<const config::Cidr> trusted) {
  if (!is_trusted(peer, trusted)) {
    return peer;  // anyone can write X-Forwarded-For; only trusted proxies are believed
  }
  // Walk from the hop nearest to us. `reporter` is the address of the hop that wrote the entry
  // being looked at; each trusted entry becomes the reporter of the one to its left.
  address reporter = peer;
  visit_forwarded_right_to_left(fields, [&](std::string_view entry) {
    // parse_ip_address accepts plain literals only: "v4:port", "[v6]" and zone ids are garbage.
    const std::optional<address> hop = config::parse_ip_address(entry);
    if (!hop) {
      return false;  // garbage: keep the hop that reported it
    }
    reporter = *hop;
    return is_trusted(reporter, trusted);  // an untrusted address is the client
  });
  return reporter;  // the client, the reporter of garbage, or the leftmost when all are trusted
}

std::string_view identify(const http1::FieldList& fields,
                          std::span<const config::IdentitySource> sources,
                          const tls::ClientCertificate& cert, const address& peer,
                          std::string_view peer_text, std::span<const config::Cidr> trusted,
                          std::string& scratch) {
  for (const config::IdentitySource& source : sources) {
    if (source.kind == Kind::kClientIp) {
      break;  // always yields, so the sources after it are never reached
    }
    if (const std::string_view value = source_value(fields, cert, source); !value.empty()) {
      return value;
    }
  }
  const address client = client_ip(fields, peer, trusted);
  if (client == peer) {
    return peer_text;
  }
  scratch = forwarded_address(client);
  return scratch;
}

}  // namespace sluice::proxy
