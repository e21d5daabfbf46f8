// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/identity.hpp"

#include <boost/beast/core/string.hpp>
#include <optional>

#include "gateway/config/endpoint.hpp"
#include "gateway/proxy/forwarder.hpp"

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

/// The first `name` field's value, trimmed; empty when absent.
std::string_view header_value(const http::request_header<>& req, std::string_view name) {
  const auto it = req.find(name);
  return it == req.end() ? std::string_view{} : trim(it->value());
}

/// The token of `Authorization: Bearer TOKEN` (RFC 6750 §2.1: the scheme is case-insensitive and
/// followed by at least one space); empty for any other scheme.
std::string_view bearer_token(const http::request_header<>& req) {
  constexpr std::string_view kScheme = "bearer";
  const std::string_view value = header_value(req, "Authorization");
  if (value.size() <= kScheme.size() ||
      !boost::beast::iequals(value.substr(0, kScheme.size()), kScheme) ||
      kWhitespace.find(value[kScheme.size()]) == std::string_view::npos) {
    return {};
  }
  return trim(value.substr(kScheme.size()));  // not empty: `value` ends in non-whitespace
}

/// What a non-client-ip source yields; empty = nothing.
std::string_view source_value(const http::request_header<>& req,
                              const config::IdentitySource& source) {
  switch (source.kind) {
    case Kind::kHeader:
      return header_value(req, source.header);
    case Kind::kBearer:
      return bearer_token(req);
    case Kind::kClientIp:
      break;
  }
  return {};
}

/// Calls `visit(entry)` on each X-Forwarded-For entry, trimmed, from the rightmost (the last
/// entry of the last field) leftwards, while it returns true. Entries view `req`: no copies.
template <typename Visit>
void visit_forwarded_right_to_left(const http::request_header<>& req, Visit visit) {
  // Beast keeps the fields of one name adjacent and in arrival order (insert() places a repeat
  // after the last field of its name), so equal_range() is every X-Forwarded-For field in order.
  const auto [first, last] = req.equal_range(kForwardedFor);
  for (auto field = last; field != first;) {
    --field;
    std::string_view rest = field->value();
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

address client_ip(const http::request_header<>& req, const address& peer,
                  std::span<const config::Cidr> trusted) {
  if (!is_trusted(peer, trusted)) {
    return peer;  // anyone can write X-Forwarded-For; only trusted proxies are believed
  }
  // Walk from the hop nearest to us. `reporter` is the address of the hop that wrote the entry
  // being looked at; each trusted entry becomes the reporter of the one to its left.
  address reporter = peer;
  visit_forwarded_right_to_left(req, [&](std::string_view entry) {
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

std::string_view identify(const http::request_header<>& req,
                          std::span<const config::IdentitySource> sources, const address& peer,
                          std::span<const config::Cidr> trusted, std::string& scratch) {
  for (const config::IdentitySource& source : sources) {
    if (source.kind == Kind::kClientIp) {
      break;  // always yields, so the sources after it are never reached
    }
    if (const std::string_view value = source_value(req, source); !value.empty()) {
      return value;
    }
  }
  scratch = forwarded_address(client_ip(req, peer, trusted));
  return scratch;
}

}  // namespace sluice::proxy
