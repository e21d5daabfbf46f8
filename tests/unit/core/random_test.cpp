// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/random.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "tests/support/scripted_random.hpp"

namespace sluice::core {
namespace {

TEST(SystemRandomTest, DrawsLieInTheUnitInterval) {
  SystemRandom random;
  std::set<double> seen;
  for (int i = 0; i < 10000; ++i) {
    const double u = random.next_unit();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
  }
  // 53-bit draws: a repeat among 10^4 has probability ~ 10^8 / 2^54, i.e. never.
  EXPECT_EQ(seen.size(), 10000U);
}

/// The draw `random` gives the calling thread next, taken in a forked copy of this process and
/// returned to the parent, which does not draw: fork() copies the calling thread with its
/// thread_local state, so this is what the thread's own generator yields next if nothing else
/// touches it. (A snapshot of memory, not a program run: the child only draws, writes 8 bytes
/// and _exits.) nullopt if the child fails.
std::optional<double> next_draw_in_a_forked_copy(SystemRandom& random) {
  std::array<int, 2> fds{-1, -1};
  if (::pipe(fds.data()) != 0) {
    return std::nullopt;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    const double draw = random.next_unit();
    const bool written = ::write(fds[1], &draw, sizeof draw) == sizeof draw;
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  double draw = 0;
  const bool read = pid > 0 && ::read(fds[0], &draw, sizeof draw) == sizeof draw;
  ::close(fds[0]);
  int status = 0;
  const bool exited =
      pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return read && exited ? std::optional<double>(draw) : std::nullopt;
}

// One generator per thread: another thread's draws leave this thread's stream exactly where it
// was. A generator shared by the threads (locked or not) fails this: the other thread's 1000
// draws would have moved it on.
TEST(SystemRandomTest, OtherThreadsDrawsDoNotMoveThisThreadsStream) {
  SystemRandom random;
  (void)random.next_unit();  // this thread's generator exists (and is seeded) before the fork
  const std::optional<double> undisturbed = next_draw_in_a_forked_copy(random);
  ASSERT_TRUE(undisturbed.has_value()) << "the forked copy did not report its draw";
  std::thread other([&] {
    for (int i = 0; i < 1000; ++i) {
      (void)random.next_unit();
    }
  });
  other.join();
  EXPECT_EQ(random.next_unit(), *undisturbed);
}

// Each thread's generator has its own seed: fresh threads start different streams. A
// per-thread generator with a fixed seed fails this (every thread draws the same sequence).
TEST(SystemRandomTest, EachNewThreadStartsADifferentStream) {
  SystemRandom random;
  std::vector<std::array<double, 4>> firsts(8);
  for (auto& draws : firsts) {
    std::thread([&] {
      for (double& d : draws) {
        d = random.next_unit();
      }
    }).join();
  }
  std::sort(firsts.begin(), firsts.end());
  const auto same = std::adjacent_find(firsts.begin(), firsts.end());
  EXPECT_TRUE(same == firsts.end())
      << "two threads drew the same first four values, starting " << (*same)[0];
}

TEST(ScriptedRandomTest, ReturnsTheScriptThenTheFallback) {
  testing::ScriptedRandom random;
  random.push(0.25);
  random.push(0.75);
  EXPECT_EQ(random.next_unit(), 0.25);
  EXPECT_EQ(random.next_unit(), 0.75);
  EXPECT_EQ(random.next_unit(), 0.5);
  random.set_fallback([] { return 0.125; });
  EXPECT_EQ(random.next_unit(), 0.125);
  EXPECT_EQ(random.taken(), 4U);
}

}  // namespace
}  // namespace sluice::core
