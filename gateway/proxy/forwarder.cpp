// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/forwarder.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <random>

namespace sluice::proxy {
namespace {

namespace http = boost::beast::http;
using boost::beast::iequals;

bool protected_field(std::string_view name) {
  return iequals(name, "content-length") || iequals(name, "transfer-encoding") ||
         iequals(name, "host");
}

bool starts_with_proxy(std::string_view name) {
  return name.size() >= 6 && iequals(name.substr(0, 6), "proxy-");
}

/// splitmix64 seeded once per thread from std::random_device.
std::uint64_t next_random() {
  thread_local std::uint64_t state = [] {
    std::random_device device;
    return (std::uint64_t{device()} << 32U) | device();
  }();
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

bool usable_request_id(std::string_view id) {
  return !id.empty() && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

void strip_hop_by_hop(http::fields& fields) {
  // One pass over the fields (this runs twice per proxied request). The names listed in
  // Connection are views into its values, so the Connection fields themselves go last.
  boost::container::small_vector<std::string_view, 8> named;
  bool has_connection = false;
  for (auto it = fields.find(http::field::connection);
       it != fields.end() && it->name() == http::field::connection; ++it) {
    has_connection = true;
    for (const auto token : http::token_list(it->value())) {
      if (!protected_field(token)) {
        named.emplace_back(token.data(), token.size());
      }
    }
  }
  const auto listed = [&named](std::string_view name) {
    return std::any_of(named.begin(), named.end(),
                       [name](std::string_view n) { return iequals(n, name); });
  };
  for (auto it = fields.begin(); it != fields.end();) {
    const http::field name = it->name();
    const bool hop = name == http::field::keep_alive || name == http::field::te ||
                     name == http::field::trailer || name == http::field::upgrade ||
                     (name != http::field::connection &&
                      (starts_with_proxy(it->name_string()) || listed(it->name_string())));
    it = hop ? fields.erase(it) : std::next(it);
  }
  if (has_connection) {
    fields.erase(http::field::connection);
  }
}

bool is_trusted(const boost::asio::ip::address& peer,
                std::span<const config::Cidr> trusted) noexcept {
  return std::any_of(trusted.begin(), trusted.end(),
                     [&](const config::Cidr& c) { return c.contains(peer); });
}

std::string forwarded_address(const boost::asio::ip::address& peer) {
  if (peer.is_v6() && peer.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, peer.to_v6()).to_string();
  }
  return peer.to_string();
}

void prepare_upstream_request(http::fields& fields, const boost::asio::ip::address& peer,
                              bool peer_trusted) {
  strip_hop_by_hop(fields);
  fields.erase(http::field::expect);
  // X-Forwarded-For: every value the client sent, in order, then the peer (SPEC §4a).
  std::string xff;
  for (auto it = fields.find("X-Forwarded-For");
       it != fields.end() && iequals(it->name_string(), "X-Forwarded-For"); ++it) {
    if (!it->value().empty()) {
      xff.append(xff.empty() ? "" : ", ").append(it->value());
    }
  }
  xff.append(xff.empty() ? "" : ", ").append(forwarded_address(peer));
  fields.set("X-Forwarded-For", xff);
  if (!peer_trusted || fields.count("X-Forwarded-Proto") == 0) {
    fields.set("X-Forwarded-Proto", "http");
  }
}

std::string make_request_id() {
  static constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string id(32, '0');
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t bits = next_random();
    for (std::size_t i = 0; i < 16; ++i) {
      id[half * 16 + i] = kHex[bits & 0xfU];
      bits >>= 4U;
    }
  }
  return id;
}

std::string ensure_request_id(http::fields& fields) {
  const auto it = fields.find("X-Request-Id");
  if (it != fields.end() && usable_request_id(it->value()) && fields.count("X-Request-Id") == 1) {
    return std::string(it->value());
  }
  std::string id = make_request_id();
  fields.set("X-Request-Id", id);
  return id;
}

}  // namespace sluice::proxy
