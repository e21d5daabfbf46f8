// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/token_cache.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::auth {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

const system_clock::time_point kAt{seconds(1'800'000'000)};

VerifiedToken user(const std::string& name, std::optional<std::int64_t> exp) {
  return VerifiedToken{name, std::nullopt, exp};
}

TEST(TokenCacheTest, AVerifiedTokenIsKeptUntilItsExpAndNoLonger) {
  TokenCache cache;
  cache.remember("token-a", user("alice", 1'800'000'100), kAt);
  const Verification* hit = cache.find("token-a", kAt + seconds(99));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(std::get<VerifiedToken>(*hit).user, "alice");
  EXPECT_EQ(cache.find("token-b", kAt), nullptr);
  EXPECT_EQ(cache.find("token-a", kAt + seconds(100)), nullptr);  // at exp: gone
  EXPECT_EQ(cache.size(), 0U);
}

TEST(TokenCacheTest, WithoutExpATokenIsKeptForTheLongestAndAnExpiredOneNotAtAll) {
  TokenCache cache(
      {.verified = 10, .refused = 10, .refused_for = seconds(10), .longest = seconds(60)});
  cache.remember("no-exp", user("bob", std::nullopt), kAt);
  cache.remember("far-exp", user("carol", 1'900'000'000), kAt);
  cache.remember("past-exp", user("dave", 1'700'000'000), kAt);
  EXPECT_NE(cache.find("no-exp", kAt + seconds(59)), nullptr);
  EXPECT_NE(cache.find("far-exp", kAt + seconds(59)), nullptr);
  EXPECT_EQ(cache.find("past-exp", kAt), nullptr);
  EXPECT_EQ(cache.find("no-exp", kAt + seconds(60)), nullptr);
  EXPECT_EQ(cache.find("far-exp", kAt + seconds(60)), nullptr);
}

TEST(TokenCacheTest, RefusalsAreRememberedBrieflyButNotThoseThatMaySoonSucceed) {
  TokenCache cache;  // refusals for 10 s
  cache.remember("forged", AuthFailure::kBadSignature, kAt);
  cache.remember("new-kid", AuthFailure::kUnknownKey, kAt);
  cache.remember("early", AuthFailure::kNotYetValid, kAt);
  const Verification* hit = cache.find("forged", kAt + seconds(9));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(std::get<AuthFailure>(*hit), AuthFailure::kBadSignature);
  EXPECT_EQ(cache.find("forged", kAt + seconds(10)), nullptr);
  EXPECT_EQ(cache.find("new-kid", kAt), nullptr);
  EXPECT_EQ(cache.find("early", kAt), nullptr);
}

TEST(TokenCacheTest, AFloodOfRefusedTokensNeverPushesVerifiedOnesOut) {
  TokenCache cache(
      {.verified = 3, .refused = 2, .refused_for = seconds(10), .longest = seconds(600)});
  for (const char* token : {"v1", "v2", "v3"}) {
    cache.remember(token, user(token, std::nullopt), kAt);
  }
  for (int i = 0; i < 1000; ++i) {
    cache.remember("forged-" + std::to_string(i), AuthFailure::kBadSignature, kAt);
  }
  EXPECT_EQ(cache.size(), 5U);
  for (const char* token : {"v1", "v2", "v3"}) {
    EXPECT_NE(cache.find(token, kAt), nullptr) << token;
  }
  EXPECT_NE(cache.find("forged-999", kAt), nullptr);    // the newest refusal is kept
  cache.remember("v4", user("v4", std::nullopt), kAt);  // a fourth verified one makes room
  EXPECT_EQ(cache.size(), 5U);
  EXPECT_NE(cache.find("v4", kAt), nullptr);
}

TEST(TokenCacheTest, ALaterVerdictForTheSameTokenReplacesTheFirst) {
  TokenCache cache;
  cache.remember("t", AuthFailure::kBadSignature, kAt);
  cache.remember("t", user("erin", std::nullopt), kAt);
  ASSERT_NE(cache.find("t", kAt), nullptr);
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(*cache.find("t", kAt)));
  EXPECT_EQ(cache.size(), 1U);
  cache.clear();
  EXPECT_EQ(cache.find("t", kAt), nullptr);
}

}  // namespace
}  // namespace sluice::auth
