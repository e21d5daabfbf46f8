// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/config_history.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "tests/support/temp_dir.hpp"

namespace sluice::insight {
namespace {

using nlohmann::ordered_json;
using namespace std::chrono_literals;

/// A wall clock that moves only when the test says so.
class HistoryTest : public ::testing::Test {
 protected:
  testing::TempDir dir{"sluice-history"};
  std::filesystem::path file = ConfigHistory::file_beside(dir / "sluice.json");
  std::chrono::system_clock::time_point now =
      std::chrono::system_clock::time_point{} + 1'795'694'400'123ms;  // 2026-11-26T12:00:00.123Z

  ConfigHistory::WallClock wall() {
    return [this] { return now; };
  }

  static ordered_json doc(int requests) { return {{"limits", {{"p", {{"requests", requests}}}}}}; }

  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static void write(const std::filesystem::path& path, std::string_view text) {
    std::ofstream(path) << text;
  }
};

TEST_F(HistoryTest, NumbersVersionsFromOneAndStampsThemWithTheWallClock) {
  ConfigHistory history(wall(), std::nullopt);
  EXPECT_EQ(history.latest(), nullptr);
  std::optional<std::string> warning;
  const auto& first =
      history.record(VersionSource::kStart, std::nullopt, "initial config", doc(1), warning);
  EXPECT_FALSE(warning);
  EXPECT_EQ(first.version, 1U);
  EXPECT_EQ(first.ts, "2026-11-26T12:00:00.123Z");
  now += 1s + 5ms;
  const auto& second = history.record(VersionSource::kAdmin, "1a2b3c4d5e6f", "x", doc(2), warning);
  EXPECT_EQ(second.version, 2U);
  EXPECT_EQ(second.ts, "2026-11-26T12:00:01.128Z");
  EXPECT_EQ(history.find(1)->config, doc(1));
  EXPECT_EQ(history.find(3), nullptr);
  EXPECT_EQ(history.find(0), nullptr);
}

TEST_F(HistoryTest, KeepsTheLastFifty) {
  ConfigHistory history(wall(), std::nullopt);
  std::optional<std::string> warning;
  for (int i = 1; i <= 51; ++i) {
    history.record(VersionSource::kAdmin, "open", "", doc(i), warning);
  }
  ASSERT_EQ(history.versions().size(), ConfigHistory::kCapacity);
  EXPECT_EQ(history.versions().front().version, 2U);
  EXPECT_EQ(history.find(1), nullptr);
  EXPECT_EQ(history.find(2)->config, doc(2));
  EXPECT_EQ(history.latest()->version, 51U);
}

TEST_F(HistoryTest, JsonRoundTripsEveryField) {
  ConfigVersion v{
      7, "2026-11-26T12:00:00.123Z", VersionSource::kRollback, "abc", "s", doc(3), std::nullopt};
  EXPECT_EQ(version_from_json(to_json(v, true)), v);
  v.actor = std::nullopt;
  EXPECT_TRUE(to_json(v, false)["actor"].is_null());
  EXPECT_FALSE(to_json(v, false).contains("config"));
  EXPECT_EQ(version_from_json(to_json(v, true)), v);
  ordered_json bad = to_json(v, true);
  bad["source"] = "sideways";
  EXPECT_FALSE(version_from_json(bad));
  EXPECT_FALSE(version_from_json(to_json(v, false)));  // no config
}

TEST_F(HistoryTest, AFleetVersionCarriesItsFleetNumberAndReplicaOnce) {
  ConfigHistory history(wall(), std::nullopt);
  std::optional<std::string> warning;
  history.next_from_fleet({12, "pod-a"});
  const ConfigVersion from_fleet =
      history.record(VersionSource::kFleet, std::nullopt, "s", doc(1), warning);
  ASSERT_TRUE(from_fleet.fleet);
  EXPECT_EQ(*from_fleet.fleet, (FleetOrigin{12, "pod-a"}));
  EXPECT_EQ(to_json(from_fleet, false)["fleet_version"], 12);
  EXPECT_EQ(to_json(from_fleet, false)["replica"], "pod-a");
  EXPECT_EQ(version_from_json(to_json(from_fleet, true)), from_fleet);
  // The stamp is for one version only: a reload after it is this replica's own.
  const auto& reload = history.record(VersionSource::kReload, std::nullopt, "r", doc(2), warning);
  EXPECT_FALSE(reload.fleet);
  EXPECT_FALSE(to_json(reload, false).contains("fleet_version"));
}

TEST_F(HistoryTest, PersistedHistoryContinuesAcrossInstances) {
  {
    ConfigHistory history(wall(), file);
    EXPECT_FALSE(history.load());  // no file yet: empty, no warning
    std::optional<std::string> warning;
    history.record(VersionSource::kStart, std::nullopt, "initial config", doc(1), warning);
    history.record(VersionSource::kAdmin, "open", "limits.p.requests 1 -> 2", doc(2), warning);
    EXPECT_FALSE(warning);
  }
  ConfigHistory again(wall(), file);
  EXPECT_FALSE(again.load());
  ASSERT_EQ(again.versions().size(), 2U);
  EXPECT_EQ(again.find(2)->actor, "open");
  EXPECT_EQ(again.find(2)->config, doc(2));
  std::optional<std::string> warning;
  EXPECT_EQ(again.record(VersionSource::kStart, std::nullopt, "", doc(2), warning).version, 3U);
}

TEST_F(HistoryTest, ACorruptFileIsMovedAsideAndNeverFatal) {
  write(file, "{\"format\":1,\"versions\":[{\"version\":");
  ConfigHistory history(wall(), file);
  const auto warning = history.load();
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("not valid JSON"), std::string::npos) << *warning;
  EXPECT_NE(warning->find(".corrupt"), std::string::npos) << *warning;
  EXPECT_TRUE(history.versions().empty());
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(read(file.string() + ".corrupt"), "{\"format\":1,\"versions\":[{\"version\":");
  std::optional<std::string> write_warning;
  EXPECT_EQ(history.record(VersionSource::kStart, std::nullopt, "", doc(1), write_warning).version,
            1U);
  EXPECT_TRUE(std::filesystem::exists(file));
}

TEST_F(HistoryTest, AWellFormedFileOfTheWrongShapeIsCorruptToo) {
  for (const char* text : {R"([1,2])", R"({"format":2,"versions":[]})",
                           R"({"format":1,"versions":[{"version":1}]})"}) {
    write(file, text);
    ConfigHistory history(wall(), file);
    EXPECT_TRUE(history.load()) << text;
    EXPECT_TRUE(history.versions().empty());
    EXPECT_EQ(read(file.string() + ".corrupt"), text);
  }
}

TEST_F(HistoryTest, VersionsOutOfOrderAreCorrupt) {
  ConfigVersion a{2, "t", VersionSource::kStart, std::nullopt, "", doc(1), std::nullopt};
  ConfigVersion b{2, "t", VersionSource::kAdmin, "open", "", doc(2), std::nullopt};
  write(file,
        ordered_json{{"format", 1}, {"versions", {to_json(a, true), to_json(b, true)}}}.dump());
  ConfigHistory history(wall(), file);
  const auto warning = history.load();
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("out of order"), std::string::npos) << *warning;
}

TEST_F(HistoryTest, AFailedWriteKeepsTheVersionInMemoryAndWarns) {
  ConfigHistory history(wall(), dir / "missing-dir" / "h.json");
  std::optional<std::string> warning;
  const auto& v = history.record(VersionSource::kAdmin, "open", "", doc(1), warning);
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("not written"), std::string::npos) << *warning;
  EXPECT_EQ(v.version, 1U);
  EXPECT_EQ(history.versions().size(), 1U);
}

}  // namespace
}  // namespace sluice::insight
