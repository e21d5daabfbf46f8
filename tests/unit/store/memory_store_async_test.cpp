// SPDX-License-Identifier: Apache-2.0
// The store interface is asynchronous in shape: try_decide() answers inline when the store can
// (the memory store always can); the asynchronous form follows Asio's completion rules.
#include <gtest/gtest.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <string>

#include "gateway/store/memory_store.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::store {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

class MemoryStoreAsyncTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_;
  MemoryStore memory_{clock_, MemoryStore::Options{}};
  LimitStore& store_ = memory_;  // callers see only the interface
  PolicyId id_ = [this] {
    limiter::Policy p;
    p.name = "standard";
    p.requests = 3;
    p.window = 1000ms;
    p.buckets = 10;
    return store_.apply(p);
  }();

  /// The data path's pattern: inline when possible, else await.
  net::awaitable<limiter::LimitDecision> decide(std::string_view key) {
    if (auto d = store_.try_decide(store::StoreSlot{}, id_, key)) {
      co_return *d;
    }
    co_return co_await store_.decide(store::StoreSlot{}, id_, key, net::use_awaitable);
  }
};

TEST_F(MemoryStoreAsyncTest, TryDecideAnswersAtOnce) {
  const auto d = store_.try_decide(store::StoreSlot{}, id_, "alice");
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 2U);
  const auto s = store_.try_inspect(store::StoreSlot{}, id_, "alice");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->count, 1U);
}

TEST_F(MemoryStoreAsyncTest, CallbacksRunOnTheirExecutorNeverInsideTheCall) {
  net::io_context ioc;
  int calls = 0;
  store_.decide(store::StoreSlot{}, id_, "alice",
                net::bind_executor(ioc, [&](limiter::LimitDecision d) {
                  ++calls;
                  EXPECT_TRUE(d.allowed);
                }));
  store_.inspect(store::StoreSlot{}, id_, "alice",
                 net::bind_executor(ioc, [&](limiter::KeyState s) {
                   ++calls;
                   EXPECT_EQ(s.count, 1U) << "decided when initiated, in initiation order";
                 }));
  EXPECT_EQ(calls, 0);
  ioc.run();
  EXPECT_EQ(calls, 2);
}

TEST_F(MemoryStoreAsyncTest, TheKeyNeedOnlyLiveDuringTheCall) {
  net::io_context ioc;
  {
    std::string key = "temporary-key-long-enough-to-live-on-the-heap";
    store_.decide(store::StoreSlot{}, id_, key,
                  net::bind_executor(ioc, [](limiter::LimitDecision) {}));
    key.assign(key.size(), 'x');
  }
  ioc.run();
  EXPECT_EQ(memory_.inspect_now(id_, "temporary-key-long-enough-to-live-on-the-heap").count, 1U);
}

// Long loops of decisions in a coroutine, through the inline fast path and through the
// asynchronous path: neither may nest a stack frame per decision (it would overflow the stack,
// as inline completion of an Asio 1.81 awaitable handler does).
TEST_F(MemoryStoreAsyncTest, CoroutinesDecideInLongLoopsWithoutGrowingTheStack) {
  net::io_context ioc;
  int admitted = 0;
  int decided = 0;
  std::exception_ptr failure;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        for (int i = 0; i < 100000; ++i) {
          const auto d = co_await decide("user-" + std::to_string(i % 100));
          admitted += d.allowed ? 1 : 0;
          ++decided;
        }
        for (int i = 0; i < 20000; ++i) {
          const auto d = co_await store_.decide(
              store::StoreSlot{}, id_, "async-" + std::to_string(i % 10), net::use_awaitable);
          admitted += d.allowed ? 1 : 0;
          ++decided;
        }
        const auto s =
            co_await store_.inspect(store::StoreSlot{}, id_, "user-7", net::use_awaitable);
        EXPECT_EQ(s.count, 3U);
      },
      [&](std::exception_ptr e) { failure = std::move(e); });
  ioc.run();
  EXPECT_FALSE(failure);
  EXPECT_EQ(decided, 120000);
  EXPECT_EQ(admitted, 330) << "110 users x 3 requests; time does not move";
}

}  // namespace
}  // namespace sluice::store
