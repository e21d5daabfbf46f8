// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/identity.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/endpoint.hpp"
#include "gateway/http1/message_parser.hpp"

namespace sluice::proxy {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::make_address;
using Kind = config::IdentitySource::Kind;

/// The fields of `req` as the data path sees them: serialized, then parsed from the bytes.
class Parsed {
 public:
  explicit Parsed(const http::request_header<>& req) {
    std::ostringstream text;
    text << req;
    text_ = text.str();
    std::size_t scanned = 0;
    const std::size_t end = http1::find_head_end(text_, scanned);
    boost::system::error_code ec;
    parser_.put(std::string_view(text_).substr(0, end), ec);
    EXPECT_FALSE(ec) << ec.message() << " in " << text_;
  }
  [[nodiscard]] const http1::FieldList& fields() const { return parser_.head().fields; }

 private:
  std::string text_;
  http1::RequestParser parser_;
};

constexpr std::string_view kXff = "X-Forwarded-For";
constexpr std::string_view kProxy = "127.0.0.1";   // a trusted peer
constexpr std::string_view kClient = "192.0.2.1";  // an untrusted peer

class IdentityTest : public ::testing::Test {
 protected:
  http::request_header<> req_ = [] {
    http::request_header<> r;
    r.method(http::verb::get);
    r.target("/");
    r.version(11);
    return r;
  }();
  std::vector<config::IdentitySource> sources_{
      {Kind::kHeader, "X-API-Key"}, {Kind::kBearer, {}}, {Kind::kClientIp, {}}};
  std::vector<config::Cidr> trusted_{cidr("127.0.0.1/32"), cidr("10.0.0.0/8"), cidr("fd00::/8")};
  std::string scratch_;
  tls::ClientCertificate cert_;

  static config::Cidr cidr(std::string_view text) { return *config::parse_cidr(text).value; }

  std::string who(std::string_view peer = kClient) {
    const Parsed parsed(req_);
    const auto address = make_address(peer);
    const std::string peer_text = forwarded_address(address);
    return std::string(
        identify(parsed.fields(), sources_, cert_, address, peer_text, trusted_, scratch_));
  }
  std::string ip(std::string_view peer = kProxy) {
    const Parsed parsed(req_);
    return client_ip(parsed.fields(), make_address(peer), trusted_).to_string();
  }
  void xff(std::string_view value) { req_.set(kXff, value); }
  void bearer(std::string_view value) { req_.set(http::field::authorization, value); }
};

TEST_F(IdentityTest, ClientCertificateNamesYieldTheNameTheSourceAsksFor) {
  using CertName = config::IdentitySource::CertName;
  cert_ = {"partner-a", "a.partners.test", "spiffe://partners/a"};
  sources_ = {{Kind::kClientCert, {}, CertName::kSanUri}, {Kind::kClientIp, {}}};
  EXPECT_EQ(who(), "spiffe://partners/a");
  sources_[0].cert_name = CertName::kSanDns;
  EXPECT_EQ(who(), "a.partners.test");
  sources_[0].cert_name = CertName::kSubjectCn;
  EXPECT_EQ(who(), "partner-a");
}

TEST_F(IdentityTest, NoClientCertificateNameFallsThroughToTheNextSource) {
  using CertName = config::IdentitySource::CertName;
  cert_ = {"partner-a", "", ""};  // a certificate without SANs
  sources_ = {{Kind::kClientCert, {}, CertName::kSanDns},
              {Kind::kHeader, "X-API-Key"},
              {Kind::kClientIp, {}}};
  req_.set("X-API-Key", "key-1");
  EXPECT_EQ(who(), "key-1");
  cert_ = {};  // no certificate at all
  EXPECT_EQ(who(), "key-1");
  req_.erase("X-API-Key");
  EXPECT_EQ(who(), kClient);
}

TEST_F(IdentityTest, TheFirstSourceThatYieldsWinsInConfigOrder) {
  req_.set("X-API-Key", "key-1");
  bearer("Bearer tok");
  EXPECT_EQ(who(), "key-1");
  EXPECT_TRUE(scratch_.empty());  // views the request: no copy
  sources_ = {{Kind::kBearer, {}}, {Kind::kHeader, "X-API-Key"}, {Kind::kClientIp, {}}};
  EXPECT_EQ(who(), "tok");
  sources_ = {{Kind::kClientIp, {}}, {Kind::kHeader, "X-API-Key"}, {Kind::kBearer, {}}};
  EXPECT_EQ(who(), "192.0.2.1");
}

TEST_F(IdentityTest, AMissingOrEmptyHeaderFallsThrough) {
  bearer("Bearer tok");
  EXPECT_EQ(who(), "tok");
  req_.set("X-API-Key", "");
  EXPECT_EQ(who(), "tok");
  req_.set("X-API-Key", " \t ");
  EXPECT_EQ(who(), "tok");
  req_.erase(http::field::authorization);
  EXPECT_EQ(who(), "192.0.2.1");
}

TEST_F(IdentityTest, ReadsTheFirstHeaderOccurrenceTrimmedAndCaseInsensitively) {
  req_.insert("x-api-key", " \tkey-1  ");
  req_.insert("X-Api-Key", "key-2");
  EXPECT_EQ(who(), "key-1");
}

TEST_F(IdentityTest, ReadsBearerTokens) {
  bearer("Bearer abc.def");
  EXPECT_EQ(who(), "abc.def");
  bearer("bEaReR   abc.def  ");
  EXPECT_EQ(who(), "abc.def");
  bearer("  BEARER\txyz");
  EXPECT_EQ(who(), "xyz");
  EXPECT_TRUE(scratch_.empty());
}

TEST_F(IdentityTest, IgnoresOtherSchemesAndEmptyBearerTokens) {
  for (const std::string_view value :
       {"Basic dXNlcjpwdw==", "Bearer ", "Bearer", "Bearer \t ", "Bearerabc", "Token abc", "abc"}) {
    bearer(value);
    EXPECT_EQ(who(), "192.0.2.1") << '"' << value << '"';
  }
}

TEST_F(IdentityTest, FallsBackToTheClientIpWhenNoSourceYields) {
  sources_ = {{Kind::kHeader, "X-API-Key"}, {Kind::kBearer, {}}};
  bearer("Basic x");
  EXPECT_EQ(who("198.51.100.9"), "198.51.100.9");
  xff("203.0.113.5");
  EXPECT_EQ(who(kProxy), "203.0.113.5");  // the fallback honours X-Forwarded-For too
  sources_.clear();
  EXPECT_EQ(who("198.51.100.9"), "198.51.100.9");
}

TEST_F(IdentityTest, IgnoresForwardedForFromAnUntrustedPeer) {
  xff("203.0.113.5");
  EXPECT_EQ(ip(kClient), "192.0.2.1");
  EXPECT_EQ(who(kClient), "192.0.2.1");
}

TEST_F(IdentityTest, UsesTheOnlyEntryFromATrustedPeer) {
  EXPECT_EQ(ip(), "127.0.0.1");  // no X-Forwarded-For: the peer
  xff(" 203.0.113.5 ");
  EXPECT_EQ(ip(), "203.0.113.5");
  EXPECT_EQ(who(kProxy), "203.0.113.5");
}

TEST_F(IdentityTest, TakesTheRightmostUntrustedAddress) {
  xff("198.51.100.7, 203.0.113.5");  // the left one may be spoofed by the client
  EXPECT_EQ(ip(), "203.0.113.5");
  xff("198.51.100.7,203.0.113.5");
  EXPECT_EQ(ip(), "203.0.113.5");
}

TEST_F(IdentityTest, SkipsAChainOfTrustedProxies) {
  xff("198.51.100.7, 203.0.113.5, 10.0.0.7, 10.1.2.3");
  EXPECT_EQ(ip(), "203.0.113.5");
  EXPECT_EQ(ip("10.9.9.9"), "203.0.113.5");
}

TEST_F(IdentityTest, AllTrustedMeansTheLeftmost) {
  xff("10.0.0.1, 10.0.0.2, 127.0.0.1");
  EXPECT_EQ(ip(), "10.0.0.1");
}

TEST_F(IdentityTest, JoinsRepeatedForwardedForFieldsInOrder) {
  req_.insert(kXff, "198.51.100.7");
  req_.insert(kXff, "203.0.113.5, 10.0.0.2");
  EXPECT_EQ(ip(), "203.0.113.5");
  req_.insert(kXff, "10.0.0.3");
  EXPECT_EQ(ip(), "203.0.113.5");  // across a field boundary
  req_.insert(http::field::host, "example.com");
  req_.insert(kXff, "198.51.100.8");  // a later field, after another header
  EXPECT_EQ(ip(), "198.51.100.8");
}

TEST_F(IdentityTest, GarbageStopsAtTheHopThatReportedIt) {
  xff("203.0.113.5, not-an-ip, 10.0.0.2");
  EXPECT_EQ(ip(), "10.0.0.2");
  xff("203.0.113.5, 10.0.0.2, unknown");
  EXPECT_EQ(ip(), "127.0.0.1");
  xff("198.51.100.7, , 10.0.0.2");  // an empty entry
  EXPECT_EQ(ip(), "10.0.0.2");
  xff("203.0.113.5,");
  EXPECT_EQ(ip(), "127.0.0.1");
  EXPECT_EQ(who(kProxy), "127.0.0.1");
}

TEST_F(IdentityTest, OnlyPlainIpLiteralsAreAddresses) {
  for (const std::string_view entry : {"203.0.113.5:80", "[2001:db8::1]", "[2001:db8::1]:443",
                                       "fe80::1%eth0", "203.0.113", "203.0.113.256", "_hidden"}) {
    xff(entry);
    EXPECT_EQ(ip(), "127.0.0.1") << entry;
  }
}

TEST_F(IdentityTest, AnEmptyForwardedForFieldStopsTheWalk) {
  xff("");
  EXPECT_EQ(ip(), "127.0.0.1");
  req_.insert(kXff, "10.0.0.2");
  EXPECT_EQ(ip(), "10.0.0.2");  // fields "" then "10.0.0.2": the trusted hop reported garbage
  xff("203.0.113.5");
  req_.insert(kXff, "");
  EXPECT_EQ(ip(), "127.0.0.1");
}

TEST_F(IdentityTest, HandlesIpv6Entries) {
  xff("2001:db8::1");
  EXPECT_EQ(ip(), "2001:db8::1");
  xff("2001:db8::7, 2001:DB8::1, fd00::2");
  EXPECT_EQ(ip("fd00::1"), "2001:db8::1");
  EXPECT_EQ(who("fd00::1"), "2001:db8::1");
  xff("fd00::3, fd00::2");
  EXPECT_EQ(ip("fd00::1"), "fd00::3");
}

TEST_F(IdentityTest, ShowsIpv4MappedAddressesAsIpv4) {
  xff("2001:db8::1");
  EXPECT_EQ(ip("::ffff:127.0.0.1"), "2001:db8::1");  // a dual-stack socket's trusted peer
  xff("::ffff:203.0.113.5, ::ffff:10.0.0.2");
  EXPECT_EQ(who("::ffff:127.0.0.1"), "203.0.113.5");
  req_.erase(kXff);
  EXPECT_EQ(who("::ffff:192.0.2.1"), "192.0.2.1");
  EXPECT_EQ(who("::ffff:127.0.0.1"), "127.0.0.1");
}

TEST(ForwardedAddressTest, IsWhatInetNtopWritesWithMappedAddressesAsIpv4) {
  // IPv4 is formatted by hand (no inet_ntop, no sprintf); it must be byte for byte Asio's text.
  std::vector<boost::asio::ip::address_v4> v4s;
  for (const char* text : {"0.0.0.0", "255.255.255.255", "1.2.3.4", "10.0.0.1", "100.20.3.40",
                           "203.0.113.66", "9.99.199.255"}) {
    v4s.push_back(boost::asio::ip::make_address_v4(text));
  }
  std::uint32_t bits = 0x9e3779b9U;
  for (int i = 0; i < 1000; ++i) {
    bits = bits * 1664525U + 1013904223U;
    v4s.emplace_back(bits);
  }
  for (const auto& v4 : v4s) {
    EXPECT_EQ(forwarded_address(v4), v4.to_string());
    const auto mapped = boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, v4);
    EXPECT_EQ(forwarded_address(mapped), v4.to_string());
  }
  for (const char* text : {"::1", "2001:db8::7", "fe80::1", "::"}) {
    EXPECT_EQ(forwarded_address(make_address(text)), make_address(text).to_string());
  }
}

}  // namespace
}  // namespace sluice::proxy
