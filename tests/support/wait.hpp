// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <string_view>
#include <thread>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// Polls `condition` every `interval` until it holds or `timeout` has passed: the one way an
/// integration test waits for a state (a metric, a count, a clock) instead of sleeping "long
/// enough". The condition is checked at least once, and once after the last sleep. Exceptions
/// from `condition` propagate. Use it as
/// `ASSERT_TRUE(wait_until("the request is in flight upstream", [&] { ... }));` — on timeout
/// the failure says what was awaited and for how long.
[[nodiscard]] inline ::testing::AssertionResult wait_until(
    std::string_view what, const std::function<bool()>& condition,
    std::chrono::milliseconds timeout = kDefaultTimeout,
    std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) {
      return ::testing::AssertionSuccess();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return ::testing::AssertionFailure()
             << "timed out after " << timeout.count() << " ms waiting for: " << what;
    }
    std::this_thread::sleep_for(interval);
  }
}

/// Runs `ioc` (on this thread, in slices of 10 ms) until `done` holds or `timeout` has passed;
/// true when done: for unit tests that drive an io_context themselves and wait for a handler.
template <typename Done>
[[nodiscard]] bool run_until(boost::asio::io_context& ioc, Done done,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    ioc.restart();
    ioc.run_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace sluice::testing
