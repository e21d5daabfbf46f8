// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/credential_slot.hpp"

#include <gtest/gtest.h>

namespace sluice::auth {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

TEST(CredentialSlotTest, AWorkerSeesEveryChangeAndForgetsTheTokensItVerifiedBefore) {
  CredentialSlot slot;
  WorkerCredentials worker(slot);
  EXPECT_EQ(worker.current().jwt, nullptr);
  EXPECT_EQ(worker.current().api_keys, nullptr);
  const system_clock::time_point now{seconds(1'800'000'000)};
  worker.tokens().remember("t", VerifiedToken{"alice", std::nullopt, std::nullopt}, now);
  EXPECT_NE(worker.tokens().find("t", now), nullptr);
  EXPECT_EQ(worker.current().jwt, nullptr);  // no change: the cache stays
  EXPECT_NE(worker.tokens().find("t", now), nullptr);

  auto keys = std::make_shared<const ApiKeyTable>(ApiKeyTable().with_key("robot", "k", ""));
  slot.set_api_keys(keys);
  EXPECT_EQ(worker.current().api_keys, keys);
  // A new key set may have dropped the key a token was verified with.
  EXPECT_EQ(worker.tokens().find("t", now), nullptr);

  auto verifier = std::make_shared<const JwtVerifier>(JwtPolicy{}, std::make_shared<JwkSet>());
  slot.set_jwt(verifier);
  EXPECT_EQ(worker.current().jwt, verifier);
  EXPECT_EQ(worker.current().api_keys, keys);  // the other half is kept
}

TEST(CredentialSlotTest, AnUnknownKeyIsReportedOnceUntilTaken) {
  CredentialSlot slot;
  EXPECT_FALSE(slot.take_unknown_key());
  slot.unknown_key_seen();
  slot.unknown_key_seen();
  EXPECT_TRUE(slot.take_unknown_key());
  EXPECT_FALSE(slot.take_unknown_key());
}

}  // namespace
}  // namespace sluice::auth
