// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/forwarder.hpp"

#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>
#include <set>

#include "gateway/config/endpoint.hpp"

namespace sluice::proxy {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::make_address;

TEST(ForwarderTest, RemovesHopByHopFieldsAndWhatConnectionNames) {
  http::fields f;
  f.set(http::field::connection, "keep-alive, X-Secret, Content-Length, Host");
  f.set("X-Secret", "s");
  f.set(http::field::keep_alive, "timeout=5");
  f.set(http::field::te, "trailers");
  f.set(http::field::trailer, "X");
  f.set(http::field::upgrade, "websocket");
  f.set("Proxy-Authorization", "Basic x");
  f.set("Proxy-Connection", "keep-alive");
  f.set(http::field::content_length, "3");
  f.set(http::field::host, "example.com");
  f.set("X-Keep", "yes");
  strip_hop_by_hop(f);
  for (const auto* name : {"Connection", "X-Secret", "Keep-Alive", "TE", "Trailer", "Upgrade",
                           "Proxy-Authorization", "Proxy-Connection"}) {
    EXPECT_EQ(f.count(name), 0U) << name;
  }
  EXPECT_EQ(f[http::field::content_length], "3") << "framing cannot be stripped via Connection";
  EXPECT_EQ(f[http::field::host], "example.com");
  EXPECT_EQ(f["X-Keep"], "yes");
}

TEST(ForwarderTest, AppendsThePeerToXForwardedForMergingRepeatedFields) {
  http::fields f;
  f.insert("X-Forwarded-For", "1.1.1.1");
  f.insert("X-Forwarded-For", "2.2.2.2, 3.3.3.3");
  prepare_upstream_request(f, make_address("10.0.0.9"), false);
  EXPECT_EQ(f.count("X-Forwarded-For"), 1U);
  EXPECT_EQ(f["X-Forwarded-For"], "1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9");
}

TEST(ForwarderTest, ShowsIpv4MappedPeersAsIpv4) {
  http::fields f;
  prepare_upstream_request(f, make_address("::ffff:192.0.2.7"), false);
  EXPECT_EQ(f["X-Forwarded-For"], "192.0.2.7");
}

TEST(ForwarderTest, KeepsXForwardedProtoOnlyFromTrustedPeers) {
  http::fields trusted;
  trusted.set("X-Forwarded-Proto", "https");
  prepare_upstream_request(trusted, make_address("127.0.0.1"), true);
  EXPECT_EQ(trusted["X-Forwarded-Proto"], "https");
  http::fields untrusted;
  untrusted.set("X-Forwarded-Proto", "https");
  prepare_upstream_request(untrusted, make_address("203.0.113.5"), false);
  EXPECT_EQ(untrusted["X-Forwarded-Proto"], "http");
}

TEST(ForwarderTest, RemovesExpectAndLeavesHostAsSent) {
  http::fields f;
  f.set(http::field::expect, "100-continue");
  f.set(http::field::host, "Api.Example.com:8080");
  prepare_upstream_request(f, make_address("127.0.0.1"), false);
  EXPECT_EQ(f.count(http::field::expect), 0U);
  EXPECT_EQ(f[http::field::host], "Api.Example.com:8080");
}

TEST(ForwarderTest, TrustsPeersInsideTheConfiguredNetworks) {
  const std::vector<config::Cidr> trusted{*config::parse_cidr("10.0.0.0/8").value,
                                          *config::parse_cidr("::1/128").value};
  EXPECT_TRUE(is_trusted(make_address("10.1.2.3"), trusted));
  EXPECT_TRUE(is_trusted(make_address("::1"), trusted));
  EXPECT_FALSE(is_trusted(make_address("11.0.0.1"), trusted));
}

TEST(ForwarderTest, KeepsAUsableRequestIdAndReplacesABadOne) {
  http::fields given;
  given.set("X-Request-Id", "abc-123");
  EXPECT_EQ(ensure_request_id(given), "abc-123");
  http::fields bad;
  bad.set("X-Request-Id", "has space");
  const std::string id = ensure_request_id(bad);
  EXPECT_EQ(id.size(), 32U);
  EXPECT_EQ(bad["X-Request-Id"], id);
  http::fields none;
  EXPECT_EQ(ensure_request_id(none).size(), 32U);
}

TEST(ForwarderTest, GeneratesDistinctHexRequestIds) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = make_request_id();
    ASSERT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000U);
}

}  // namespace
}  // namespace sluice::proxy
