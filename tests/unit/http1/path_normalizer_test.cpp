// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/path_normalizer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http1 {
namespace {

struct Row {
  std::string_view in;
  PathStatus status;
  std::string_view out;  ///< the normal form (kRewritten), or ignored
  bool merge = true;
};

const Row kRows[] = {
    // Already normal: one scan, no writes.
    {"/", PathStatus::kUnchanged, ""},
    {"/api/login", PathStatus::kUnchanged, ""},
    {"/api/login/", PathStatus::kUnchanged, ""},
    {"/a.b/.c/..d/...", PathStatus::kUnchanged, ""},  // dots inside names are names
    {"/api//login", PathStatus::kUnchanged, "", false},
    // Dot segments (RFC 3986 §5.2.4).
    {"/api/./login", PathStatus::kRewritten, "/api/login"},
    {"/api/x/../login", PathStatus::kRewritten, "/api/login"},
    {"/./api", PathStatus::kRewritten, "/api"},
    {"/a/b/c/./../../g", PathStatus::kRewritten, "/a/g"},
    {"/a/.", PathStatus::kRewritten, "/a/"},
    {"/a/..", PathStatus::kRewritten, "/"},
    {"/a/b/..", PathStatus::kRewritten, "/a/"},
    {"/.", PathStatus::kRewritten, "/"},
    {"/a/./", PathStatus::kRewritten, "/a/"},
    // Climbing above the root is refused, not dropped.
    {"/..", PathStatus::kAboveRoot, ""},
    {"/../a", PathStatus::kAboveRoot, ""},
    {"/a/../..", PathStatus::kAboveRoot, ""},
    {"/a/../../b", PathStatus::kAboveRoot, ""},
    {"/%2e%2e/admin", PathStatus::kAboveRoot, ""},
    // Repeated slashes.
    {"/api//login", PathStatus::kRewritten, "/api/login"},
    {"//api///login//", PathStatus::kRewritten, "/api/login/"},
    {"/a//../b", PathStatus::kRewritten, "/b"},
    {"/a//../b", PathStatus::kRewritten, "/a/b", false},  // ".." undoes the empty segment
    // Percent-encoded unreserved characters are decoded.
    {"/api/%6cogin", PathStatus::kRewritten, "/api/login"},
    {"/api/%6Cogin", PathStatus::kRewritten, "/api/login"},
    {"/%41%5a%61%7A%30%39%2D%2E%5F%7E", PathStatus::kRewritten, "/AZaz09-._~"},
    {"/api/%2e/login", PathStatus::kRewritten, "/api/login"},
    {"/api/x/%2E%2e/login", PathStatus::kRewritten, "/api/login"},
    // Everything else stays encoded, hex upper-cased; %2F, %5C, %00 never split a segment.
    {"/a%2Fb", PathStatus::kUnchanged, ""},
    {"/a%2fb", PathStatus::kRewritten, "/a%2Fb"},
    {"/a/%2F/..", PathStatus::kRewritten, "/a/"},
    {"/a/%2f..%2f", PathStatus::kRewritten, "/a/%2F..%2F"},
    {"/a%5cb", PathStatus::kRewritten, "/a%5Cb"},
    {"/a%00b", PathStatus::kUnchanged, ""},
    {"/%20x", PathStatus::kUnchanged, ""},
    {"/%c3%a9", PathStatus::kRewritten, "/%C3%A9"},
    {"/%25", PathStatus::kUnchanged, ""},    // an encoded '%' stays encoded
    {"/%2541", PathStatus::kUnchanged, ""},  // ... and is never decoded twice
    // Bad encodings and non-paths.
    {"/%", PathStatus::kBadEncoding, ""},
    {"/%4", PathStatus::kBadEncoding, ""},
    {"/%zz", PathStatus::kBadEncoding, ""},
    {"/%g0/a", PathStatus::kBadEncoding, ""},
    {"", PathStatus::kBadEncoding, ""},
    {"api/login", PathStatus::kBadEncoding, ""},
    {"*", PathStatus::kBadEncoding, ""},
};

TEST(PathNormalizerTest, EveryRuleByTable) {
  std::string out = "untouched";
  for (const Row& row : kRows) {
    SCOPED_TRACE(std::string(row.in) + (row.merge ? "" : " (merge_slashes off)"));
    out = "untouched";
    const PathStatus status = normalize_path(row.in, row.merge, out);
    EXPECT_EQ(status, row.status);
    if (row.status == PathStatus::kRewritten) {
      EXPECT_EQ(out, row.out);
      EXPECT_LE(out.size(), row.in.size());  // the normal form never grows
    }
    if (row.status == PathStatus::kUnchanged && row.in.find('%') == std::string_view::npos) {
      EXPECT_EQ(out, "untouched");  // the fast path writes nothing
    }
  }
}

TEST(PathNormalizerTest, NormalizedGivesTheFormOrNothing) {
  EXPECT_EQ(normalized("/api/./login", true), "/api/login");
  EXPECT_EQ(normalized("/api/login", true), "/api/login");
  EXPECT_EQ(normalized("/api//login", false), "/api//login");
  EXPECT_EQ(normalized("/..", true), "");
  EXPECT_EQ(normalized("/%zz", true), "");
}

TEST(PathNormalizerTest, LongPathsWork) {
  std::string path;
  for (int i = 0; i < 2000; ++i) {
    path += "/seg" + std::to_string(i) + "/.";
  }
  std::string out;
  ASSERT_EQ(normalize_path(path, true, out), PathStatus::kRewritten);
  EXPECT_EQ(out.find("/."), std::string::npos);
  EXPECT_TRUE(out.starts_with("/seg0/seg1/"));
  EXPECT_TRUE(out.ends_with("/seg1999/"));
}

/// Normalizing a normal form changes nothing, and the normal form never climbs or grows: over
/// pseudo-random paths built from a small alphabet that hits every rule (fixed seed).
TEST(PathNormalizerTest, NormalizingIsIdempotent) {
  const std::vector<std::string> pieces = {"/",   "//",  "a",   "b",   ".",   "..", "%2e", "%2E",
                                           "%2f", "%41", "%6c", "%25", "%20", "~",  "-",   "x.y"};
  std::mt19937_64 rng(20261124);
  std::string first;
  std::string second;
  int rewritten = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string path = "/";
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) {
      path += pieces[rng() % pieces.size()];
    }
    for (const bool merge : {true, false}) {
      SCOPED_TRACE(path);
      const PathStatus s = normalize_path(path, merge, first);
      if (s == PathStatus::kUnchanged) {
        first = path;
      } else if (s != PathStatus::kRewritten) {
        continue;
      }
      ++rewritten;
      ASSERT_LE(first.size(), path.size());
      ASSERT_EQ(normalize_path(first, merge, second), PathStatus::kUnchanged) << first;
    }
  }
  EXPECT_GT(rewritten, 1000);  // the alphabet really exercised the rewriting paths
}

}  // namespace
}  // namespace sluice::http1
