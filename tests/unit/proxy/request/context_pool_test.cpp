// SPDX-License-Identifier: Apache-2.0
// The worker's free list of request contexts: it keeps what the load needs and gives back what
// a quiet period did not use (docs/architecture.md, "One request, one context").
#include <gtest/gtest.h>

#include <vector>

#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {
namespace {

std::vector<ContextPool::Lease> lease(ContextPool& pool, std::size_t count) {
  std::vector<ContextPool::Lease> leases;
  leases.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    leases.push_back(pool.acquire());
  }
  return leases;
}

TEST(ContextPoolTest, KeepsAsManyAsWereInFlightSoASteadyLoadMakesNoNewOnes) {
  ContextPool pool;
  // 640 at once (64 HTTP/2 connections x 10 streams): more than the 256 the pool used to keep.
  const RequestContext* first = nullptr;
  {
    auto leases = lease(pool, 640);
    first = &*leases.front();
    EXPECT_EQ(pool.in_use(), 640U);
  }
  EXPECT_EQ(pool.in_use(), 0U);
  EXPECT_EQ(pool.idle(), 640U);
  pool.trim();  // the period's peak was 640: all are kept
  EXPECT_EQ(pool.idle(), 640U);
  {
    auto leases = lease(pool, 640);
    EXPECT_EQ(pool.idle(), 0U);  // every one came from the pool
    bool reused_first = false;
    for (const auto& l : leases) {
      reused_first = reused_first || &*l == first;
    }
    EXPECT_TRUE(reused_first);
  }
  EXPECT_EQ(pool.idle(), 640U);
}

TEST(ContextPoolTest, AQuietPeriodGivesTheContextsBack) {
  ContextPool pool;
  { auto leases = lease(pool, 300); }
  pool.trim();  // the period that had the 300
  EXPECT_EQ(pool.idle(), 300U);
  pool.trim();  // a period with none in use
  EXPECT_EQ(pool.idle(), 0U);
}

TEST(ContextPoolTest, TrimKeepsWhatThePeakNeedsBesideThoseStillInUse) {
  ContextPool pool;
  auto held = lease(pool, 10);
  { auto burst = lease(pool, 90); }  // peak 100, 10 still in use
  EXPECT_EQ(pool.idle(), 90U);
  pool.trim();
  EXPECT_EQ(pool.idle(), 90U);
  { auto some = lease(pool, 20); }  // peak 30 this period
  pool.trim();
  EXPECT_EQ(pool.idle(), 20U);
  held.clear();
  EXPECT_EQ(pool.idle(), 30U);
  pool.trim();  // this period's peak: the 10 held when it began; none in use now
  EXPECT_EQ(pool.idle(), 10U);
  pool.trim();
  EXPECT_EQ(pool.idle(), 0U);
}

TEST(ContextPoolTest, NeverKeepsMoreThanItsBound) {
  ContextPool pool;
  { auto leases = lease(pool, ContextPool::kMostKept + 50); }
  EXPECT_EQ(pool.idle(), ContextPool::kMostKept);
  EXPECT_EQ(pool.in_use(), 0U);
}

}  // namespace
}  // namespace sluice::proxy
