// SPDX-License-Identifier: Apache-2.0
#include "gateway/limiter/policy.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

TEST(PolicyTest, ShadowModeNeverRejects) {
  EXPECT_EQ(verdict(true, Mode::kShadow), Verdict::kAllowed);
  EXPECT_EQ(verdict(false, Mode::kShadow), Verdict::kShadowLimited);
  EXPECT_FALSE(rejects(verdict(false, Mode::kShadow)));
  EXPECT_FALSE(rejects(verdict(true, Mode::kShadow)));
}

TEST(PolicyTest, EnforceModeRejectsWhatTheDecisionDenies) {
  EXPECT_EQ(verdict(true, Mode::kEnforce), Verdict::kAllowed);
  EXPECT_EQ(verdict(false, Mode::kEnforce), Verdict::kLimited);
  EXPECT_TRUE(rejects(verdict(false, Mode::kEnforce)));
}

TEST(PolicyTest, BucketWidthIsTheWindowSplitEvenly) {
  Policy p;
  p.requests = 100;
  p.window = 60s;
  p.buckets = 60;
  EXPECT_EQ(p.bucket_width(), 1s);
  p.window = 10s;
  p.buckets = 40;
  EXPECT_EQ(p.bucket_width(), 250ms);
}

}  // namespace
}  // namespace sluice::limiter
