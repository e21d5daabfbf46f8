// SPDX-License-Identifier: Apache-2.0
// Every fuzz target over its seed corpus and its regression inputs (one file per finding, named
// for what it found), in the ordinary builds: a crash, a sanitizer report or a failed check
// fails the test. docs/fuzzing.md says how a finding becomes a regression input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {
namespace {

struct Target {
  const char* name;
  int (*run)(Input);
};

constexpr Target kTargets[] = {
    {"request_head", request_head},
    {"response_head", response_head},
    {"chunked_body", chunked_body},
    {"http2_frames", http2_frames},
    {"h2_upstream_response", h2_upstream_response},
    {"proxy_header", proxy_header},
    {"config_text", config_text},
    {"admin_request", admin_request},
    {"redis_reply", redis_reply},
    {"access_log_line", access_log_line},
    {"request_differential", request_differential},
    {"jose_token", jose_token},
    {"sliding_window", sliding_window},
};

/// The files of `dir` (none when it does not exist), in name order.
std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.is_regular_file()) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::uint8_t> bytes_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FuzzReplayTest : public ::testing::TestWithParam<Target> {
 protected:
  static void SetUpTestSuite() { quiet_logs(); }
};

TEST_P(FuzzReplayTest, RunsTheCorpusAndEveryRegressionInput) {
  const std::filesystem::path root = std::filesystem::path(SLUICE_SOURCE_DIR) / "tests/fuzz";
  const auto corpus = files_in(root / "corpus" / GetParam().name);
  EXPECT_FALSE(corpus.empty()) << "no seed corpus for " << GetParam().name;
  auto inputs = corpus;
  const auto regressions = files_in(root / "regressions" / GetParam().name);
  inputs.insert(inputs.end(), regressions.begin(), regressions.end());
  for (const auto& file : inputs) {
    SCOPED_TRACE(file.string());
    const auto bytes = bytes_of(file);
    EXPECT_EQ(GetParam().run(Input(bytes.data(), bytes.size())), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplayTest, ::testing::ValuesIn(kTargets),
                         [](const ::testing::TestParamInfo<Target>& param) {
                           return std::string(param.param.name);
                         });

}  // namespace
}  // namespace sluice::fuzz
