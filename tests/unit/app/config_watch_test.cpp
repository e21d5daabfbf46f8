// SPDX-License-Identifier: Apache-2.0
// ConfigWatch on a real directory and a real inotify: a change of the bytes is reported once
// (after the debounce), a touch or sluice's own write is not, and a ConfigMap's symlink swap is.
#include "gateway/app/config_watch.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace sluice::app {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class ConfigWatchTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::milliseconds kDebounce{30};

  /// Runs the loop until `changes` reaches `count` or `limit` passes (a generous bound: the
  /// test waits on the condition, never on a guess of how fast inotify is).
  void run_until(int count, std::chrono::milliseconds limit = 5s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (changes < count && std::chrono::steady_clock::now() < end) {
      ioc.run_for(10ms);
    }
  }
  /// Runs the loop for several debounce periods: what was going to be reported, is.
  void settle() {
    for (int i = 0; i < 10; ++i) {
      ioc.run_for(kDebounce);
    }
  }
  ConfigWatch make(const std::filesystem::path& path) {
    return ConfigWatch(
        ioc, path, [this] { ++changes; },
        std::make_shared<spdlog::logger>("watch", std::make_shared<spdlog::sinks::null_sink_mt>()),
        kDebounce);
  }

  [[nodiscard]] std::filesystem::path config_path() const { return dir.path() / "sluice.json"; }
  /// A started watch on config_path(), which holds `text`.
  ConfigWatch& watch_file(const std::string& text) {
    write(config_path(), text);
    watch.emplace(
        ioc, config_path(), [this] { ++changes; },
        std::make_shared<spdlog::logger>("watch", std::make_shared<spdlog::sinks::null_sink_mt>()),
        kDebounce);
    EXPECT_EQ(watch->start(), std::nullopt);
    return *watch;
  }

  TempDir dir;
  boost::asio::io_context ioc;
  int changes = 0;
  std::optional<ConfigWatch> watch;  // (destroyed before ioc)
};

TEST_F(ConfigWatchTest, NewBytesAreOneChangeAfterTheDebounceEvenInABurst) {
  ConfigWatch& watching = watch_file("{\"a\": 1}");
  const auto file = config_path();
  EXPECT_TRUE(watching.watching());
  write(file, "{\"a\": 2}");
  write(file, "{\"a\": 3}");
  write(file, "{\"a\": 4}");
  run_until(1);
  settle();
  EXPECT_EQ(changes, 1);
  write(file, "{\"a\": 5}");
  run_until(2);
  EXPECT_EQ(changes, 2);
}

TEST_F(ConfigWatchTest, TheSameBytesAnUnrelatedFileAndOurOwnWriteAreNoChange) {
  ConfigWatch& watching = watch_file("{\"a\": 1}");
  const auto file = config_path();
  write(file, "{\"a\": 1}");                     // rewritten, same bytes
  write(dir.path() / "other.pem", "unrelated");  // another file of the directory
  settle();
  EXPECT_EQ(changes, 0);
  write(file, "{\"a\": 2}");  // sluice's own write (admin.persist) ...
  watching.mark_current();    // ... which it marks at once
  settle();
  EXPECT_EQ(changes, 0);
}

TEST_F(ConfigWatchTest, ARenameOverTheFileIsAChange) {
  watch_file("{\"a\": 1}");
  const auto file = config_path();
  write(dir.path() / "sluice.json.tmp", "{\"a\": 2}");
  std::filesystem::rename(dir.path() / "sluice.json.tmp", file);  // an editor's save
  run_until(1);
  EXPECT_EQ(changes, 1);
}

// A Kubernetes ConfigMap volume: sluice.json -> ..data/sluice.json, ..data -> ..<timestamp>.
// An update writes a new timestamped directory, points ..data_tmp at it, renames ..data_tmp
// over ..data and removes the old directory.
TEST_F(ConfigWatchTest, AConfigMapSymlinkSwapIsAChangeAndTheNextSwapToo) {
  namespace fs = std::filesystem;
  const auto mount = dir.path();
  fs::create_directory(mount / "..2026_11_29_a");
  write(mount / "..2026_11_29_a" / "sluice.json", "{\"a\": 1}");
  fs::create_directory_symlink("..2026_11_29_a", mount / "..data");
  fs::create_symlink("..data/sluice.json", mount / "sluice.json");
  auto through_links = make(mount / "sluice.json");
  ASSERT_EQ(through_links.start(), std::nullopt);

  const auto swap = [&](const std::string& name, const std::string& text, const std::string& old) {
    fs::create_directory(mount / name);
    write(mount / name / "sluice.json", text);
    fs::create_directory_symlink(name, mount / "..data_tmp");
    fs::rename(mount / "..data_tmp", mount / "..data");
    fs::remove_all(mount / old);
  };
  swap("..2026_11_29_b", "{\"a\": 2}", "..2026_11_29_a");
  run_until(1);
  EXPECT_EQ(changes, 1);
  swap("..2026_11_29_c", "{\"a\": 3}", "..2026_11_29_b");
  run_until(2);
  EXPECT_EQ(changes, 2);
}

TEST_F(ConfigWatchTest, AFileThatGoesAwayIsNoChangeUntilItComesBackDifferent) {
  watch_file("{\"a\": 1}");
  const auto file = config_path();
  std::filesystem::remove(file);
  settle();
  EXPECT_EQ(changes, 0);
  write(file, "{\"a\": 2}");
  run_until(1);
  EXPECT_EQ(changes, 1);
}

TEST_F(ConfigWatchTest, StoppedItReportsNothingAndAMissingDirectoryIsAnError) {
  ConfigWatch& watching = watch_file("{\"a\": 1}");
  const auto file = config_path();
  watching.stop();
  EXPECT_FALSE(watching.watching());
  write(file, "{\"a\": 2}");
  settle();
  EXPECT_EQ(changes, 0);

  auto nowhere = make(dir.path() / "missing" / "sluice.json");
  const auto error = nowhere.start();
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("cannot watch directory"), std::string::npos) << *error;
  EXPECT_FALSE(nowhere.watching());
}

}  // namespace
}  // namespace sluice::app
