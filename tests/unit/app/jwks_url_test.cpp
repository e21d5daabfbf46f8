// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "gateway/app/jwks_refresher.hpp"

namespace sluice::app {
namespace {

TEST(JwksUrlTest, HostPortAndTargetOfAnHttpsUrl) {
  HttpsUrl url;
  ASSERT_TRUE(parse_https_url("https://id.example.com/.well-known/jwks.json", url));
  EXPECT_EQ(url.host, "id.example.com");
  EXPECT_EQ(url.port, "443");
  EXPECT_EQ(url.target, "/.well-known/jwks.json");
  HttpsUrl v6;
  ASSERT_TRUE(parse_https_url("https://[::1]:8443", v6));
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, "8443");
  EXPECT_EQ(v6.target, "/");
}

TEST(JwksUrlTest, AnythingElseIsRefused) {
  for (const char* bad : {"http://id.example.com/jwks", "https://", "https://host:/x",
                          "https://host:port/x", "https://[::1/x", "https://[::1]x/"}) {
    HttpsUrl url;
    EXPECT_FALSE(parse_https_url(bad, url)) << bad;
  }
}

}  // namespace
}  // namespace sluice::app
