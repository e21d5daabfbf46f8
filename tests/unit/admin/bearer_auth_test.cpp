// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/bearer_auth.hpp"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

TEST(BearerAuthTest, WithoutATokenEveryRequestIsAllowed) {
  EXPECT_FALSE(BearerAuth(std::nullopt).enabled());
  EXPECT_TRUE(BearerAuth(std::nullopt).allows(""));
  EXPECT_FALSE(BearerAuth(std::string()).enabled());  // an empty variable is no token
}

TEST(BearerAuthTest, AllowsOnlyTheExactTokenWithTheBearerScheme) {
  const BearerAuth auth(std::string("s3cret-token"));
  EXPECT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.allows("Bearer s3cret-token"));
  EXPECT_TRUE(auth.allows("bearer s3cret-token"));  // the scheme is case-insensitive
  EXPECT_FALSE(auth.allows(""));
  EXPECT_FALSE(auth.allows("Bearer "));
  EXPECT_FALSE(auth.allows("Bearer s3cret-toke"));
  EXPECT_FALSE(auth.allows("Bearer s3cret-token2"));
  EXPECT_FALSE(auth.allows("Bearer S3CRET-TOKEN"));
  EXPECT_FALSE(auth.allows("Basic s3cret-token"));
  EXPECT_FALSE(auth.allows("s3cret-token"));
}

TEST(BearerAuthTest, ActorIsTheTokensShortHashOrOpen) {
  EXPECT_EQ(BearerAuth(std::nullopt).actor(), "open");
  EXPECT_EQ(BearerAuth(std::string()).actor(), "open");
  // printf %s s3cret-token | sha256sum
  EXPECT_EQ(BearerAuth(std::string("s3cret-token")).actor(), "a81e611a041b");
  EXPECT_NE(BearerAuth(std::string("other")).actor(),
            BearerAuth(std::string("s3cret-token")).actor());
}

}  // namespace
}  // namespace sluice::admin
