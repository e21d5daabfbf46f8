// SPDX-License-Identifier: Apache-2.0
// normalize_path (docs/paths.md): exact tables per rule, long paths, the output buffer contract,
// and properties over pseudo-random paths (fixed seed) checked against a one-pass-per-rule oracle.
#include "gateway/http1/path_normalizer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/naive_path_normalizer.hpp"

namespace sluice::http1 {

void PrintTo(PathStatus status, std::ostream* os) {
  *os << to_string(status);
}

namespace {

using S = PathStatus;

constexpr std::string_view kUntouched = "(out was not written)";
constexpr bool kMerge = true;
constexpr bool kKeep = false;  // merge_slashes = false

struct Row {
  std::string_view path;
  PathStatus status;
  std::string_view normal;  // the normal form for kUnchanged (== path) and kRewritten
  bool merge_slashes = kMerge;
};

// What one call does with `path`, checking the contract every call must keep: `out` untouched
// unless rewritten, a rewritten form that differs from the path and is never longer.
struct Outcome {
  PathStatus status;
  std::string normal;
};

Outcome normalize(std::string_view path, bool merge_slashes) {
  std::string out(kUntouched);
  const auto status = normalize_path(path, merge_slashes, out);
  if (status == S::kUnchanged) {
    EXPECT_EQ(out, kUntouched) << "kUnchanged wrote to out";
    return {status, std::string(path)};
  }
  if (status == S::kRewritten) {
    EXPECT_NE(out, path) << "kRewritten with nothing changed";
    EXPECT_LE(out.size(), path.size()) << "the normal form grew";
    return {status, out};
  }
  return {status, ""};
}

void expect_rows(const std::vector<Row>& rows) {
  for (const auto& row : rows) {
    SCOPED_TRACE(::testing::Message()
                 << "path \"" << row.path << "\" merge_slashes " << row.merge_slashes);
    const auto outcome = normalize(row.path, row.merge_slashes);
    EXPECT_EQ(outcome.status, row.status);
    EXPECT_EQ(outcome.normal, row.normal);
    if (row.status == S::kUnchanged) {
      EXPECT_EQ(row.normal, row.path) << "bad table row: kUnchanged must keep the path";
    }
    std::string oracle;
    const auto oracle_status =
        sluice::testing::naive_normalize_path(row.path, row.merge_slashes, oracle);
    EXPECT_EQ(oracle_status, row.status) << "the oracle disagrees with the table";
    if (oracle_status == S::kRewritten) {
      EXPECT_EQ(oracle, row.normal) << "the oracle disagrees with the table";
    }
  }
}

TEST(PathNormalizerTest, LeavesNormalPathsAlone) {
  expect_rows({
      {"/", S::kUnchanged, "/"},
      {"/api/login", S::kUnchanged, "/api/login"},
      {"/api/login/", S::kUnchanged, "/api/login/"},
      {"/api/v1/users/12345/orders", S::kUnchanged, "/api/v1/users/12345/orders"},
      {"/a.b/.c/..d/.../d..", S::kUnchanged, "/a.b/.c/..d/.../d.."},
      {"/a%20b%3F%23", S::kUnchanged, "/a%20b%3F%23"},
      {"/caf%C3%A9", S::kUnchanged, "/caf%C3%A9"},
      {"/100%25", S::kUnchanged, "/100%25"},
      {"/a;b=c/d,e+f:g@h!$&'()*", S::kUnchanged, "/a;b=c/d,e+f:g@h!$&'()*"},
  });
}

TEST(PathNormalizerTest, DecodesUnreservedCharacters) {
  expect_rows({
      {"/api/%6cogin", S::kRewritten, "/api/login"},
      {"/api/%6Cogin", S::kRewritten, "/api/login"},
      {"/%41%5a%61%7A%30%39", S::kRewritten, "/AZaz09"},
      {"/%2D%2e%5F%7E", S::kRewritten, "/-._~"},
      {"/%7e/user", S::kRewritten, "/~/user"},
      {"/x%2Dy%20z", S::kRewritten, "/x-y%20z"},
  });
}

TEST(PathNormalizerTest, UpperCasesTheHexOfEverythingElse) {
  expect_rows({
      {"/a%2fb", S::kRewritten, "/a%2Fb"},
      {"/%c3%a9", S::kRewritten, "/%C3%A9"},
      {"/%C3%a9", S::kRewritten, "/%C3%A9"},
      {"/%3f%3F", S::kRewritten, "/%3F%3F"},
      {"/%ff", S::kRewritten, "/%FF"},
  });
}

TEST(PathNormalizerTest, KeepsSlashBackslashAndNulEncodedAndInsideTheirSegment) {
  expect_rows({
      {"/a%2Fb", S::kUnchanged, "/a%2Fb"},
      {"/a%2F..%2Fb", S::kUnchanged, "/a%2F..%2Fb"},
      {"/%2e%2e%2fetc", S::kRewritten, "/..%2Fetc"},
      {"/a/%2F/..", S::kRewritten, "/a/"},
      {"/a/%2F/../b", S::kRewritten, "/a/b"},
      {"/%2F", S::kUnchanged, "/%2F"},
      {"/a/%00/b", S::kUnchanged, "/a/%00/b"},
      {"/a/%00/..", S::kRewritten, "/a/"},
      {"/a%5Cb", S::kUnchanged, "/a%5Cb"},
      {"/%5c..%5c", S::kRewritten, "/%5C..%5C"},
      {"/a/%5c/../b", S::kRewritten, "/a/b"},
  });
}

TEST(PathNormalizerTest, MergesRunsOfSlashes) {
  expect_rows({
      {"/api//login", S::kRewritten, "/api/login"},
      {"//api///login", S::kRewritten, "/api/login"},
      {"/api/login//", S::kRewritten, "/api/login/"},
      {"//", S::kRewritten, "/"},
      {"///", S::kRewritten, "/"},
      {"//..", S::kAboveRoot, ""},  // merged first: "/.."
  });
}

TEST(PathNormalizerTest, KeepsEmptySegmentsWithoutMergeSlashes) {
  expect_rows({
      {"/api//login", S::kUnchanged, "/api//login", kKeep},
      {"//", S::kUnchanged, "//", kKeep},
      {"/api/login//", S::kUnchanged, "/api/login//", kKeep},
      {"/a//../b", S::kRewritten, "/a/b", kKeep},  // ".." removes the empty segment
      {"/a/.//b", S::kRewritten, "/a//b", kKeep},
      {"//..", S::kRewritten, "/", kKeep},
      {"//%6c", S::kRewritten, "//l", kKeep},
  });
}

TEST(PathNormalizerTest, RemovesDotSegments) {
  expect_rows({
      {"/api/./login", S::kRewritten, "/api/login"},
      {"/a/b/../c", S::kRewritten, "/a/c"},
      {"/a/./b/./", S::kRewritten, "/a/b/"},
      {"/a/../b", S::kRewritten, "/b"},
      {"/a/b/c/../../d", S::kRewritten, "/a/d"},
      {"/a/../b/../c/./d", S::kRewritten, "/c/d"},
      {"/./a", S::kRewritten, "/a"},
      {"/a/..//b", S::kRewritten, "/b"},
  });
}

TEST(PathNormalizerTest, TrailingDotSegmentsLeaveATrailingSlash) {
  expect_rows({
      {"/a/.", S::kRewritten, "/a/"},
      {"/a/..", S::kRewritten, "/"},
      {"/a/b/..", S::kRewritten, "/a/"},
      {"/.", S::kRewritten, "/"},
      {"/./", S::kRewritten, "/"},
      {"/a/b/../", S::kRewritten, "/a/"},
  });
}

TEST(PathNormalizerTest, DecodedDotsAreDotSegments) {
  expect_rows({
      {"/a/%2e/b", S::kRewritten, "/a/b"},
      {"/a/%2e%2E/b", S::kRewritten, "/b"},
      {"/a/%2E./b", S::kRewritten, "/b"},
      {"/a/.%2e", S::kRewritten, "/"},
      {"/a/%2e%2e%2e/b", S::kRewritten, "/a/.../b"},
      {"/a/%2e", S::kRewritten, "/a/"},
  });
}

TEST(PathNormalizerTest, RefusesToClimbAboveTheRoot) {
  expect_rows({
      {"/..", S::kAboveRoot, ""},
      {"/../", S::kAboveRoot, ""},
      {"/../a", S::kAboveRoot, ""},
      {"/a/../..", S::kAboveRoot, ""},
      {"/a/../../b", S::kAboveRoot, ""},
      {"/./../a", S::kAboveRoot, ""},
      {"/%2e%2e", S::kAboveRoot, ""},
      {"/%2E%2e/etc/passwd", S::kAboveRoot, ""},
      {"/a/b/../../..", S::kAboveRoot, ""},
      {"/..", S::kAboveRoot, "", kKeep},
  });
}

TEST(PathNormalizerTest, RefusesBadEncodingAndPathsWithoutALeadingSlash) {
  expect_rows({
      {"/%", S::kBadEncoding, ""},
      {"/%4", S::kBadEncoding, ""},
      {"/%zz", S::kBadEncoding, ""},
      {"/a%g0", S::kBadEncoding, ""},
      {"/a/%2", S::kBadEncoding, ""},
      {"/%%41", S::kBadEncoding, ""},
      {"/a/%6c/%", S::kBadEncoding, ""},  // found while rewriting
      {"/a/./%2x", S::kBadEncoding, ""},
      {"/../%zz", S::kBadEncoding, ""},  // decoding comes before dot removal
      {"/%zz/..", S::kBadEncoding, ""},
      {"", S::kBadEncoding, ""},
      {"api/login", S::kBadEncoding, ""},
      {"*", S::kBadEncoding, ""},
      {"%2Fapi", S::kBadEncoding, ""},
  });
}

TEST(PathNormalizerTest, NamesEveryStatus) {
  EXPECT_EQ(to_string(S::kUnchanged), "unchanged");
  EXPECT_EQ(to_string(S::kRewritten), "rewritten");
  EXPECT_EQ(to_string(S::kAboveRoot), "above_root");
  EXPECT_EQ(to_string(S::kBadEncoding), "bad_encoding");
}

std::string repeat(std::string_view piece, std::size_t times) {
  std::string text;
  for (std::size_t i = 0; i < times; ++i) {
    text += piece;
  }
  return text;
}

TEST(PathNormalizerTest, NormalizedGivesTheFormOrNothing) {
  EXPECT_EQ(normalized("/api/./login", true), "/api/login");
  EXPECT_EQ(normalized("/api/login", true), "/api/login");
  EXPECT_EQ(normalized("/api//login", false), "/api//login");
  EXPECT_EQ(normalized("/..", true), "");
  EXPECT_EQ(normalized("/%zz", true), "");
}

TEST(PathNormalizerTest, HandlesLongPaths) {
  constexpr std::size_t kDepth = 10000;
  const std::string deep = repeat("/segment", kDepth);
  EXPECT_EQ(normalize(deep, kMerge).status, S::kUnchanged);
  EXPECT_EQ(normalize(deep + "/" + repeat("../", kDepth), kMerge).normal, "/");
  EXPECT_EQ(normalize(deep + repeat("/..", kDepth + 1), kMerge).status, S::kAboveRoot);
  EXPECT_EQ(normalize(deep + repeat("/./", kDepth) + "x", kMerge).normal, deep + "/x");
  EXPECT_EQ(normalize(repeat("%61", kDepth), kMerge).status, S::kBadEncoding);
  EXPECT_EQ(normalize("/" + repeat("%61", kDepth), kMerge).normal, "/" + repeat("a", kDepth));
  EXPECT_EQ(normalize(repeat("/", kDepth), kMerge).normal, "/");
  EXPECT_EQ(normalize(deep + "/%", kMerge).status, S::kBadEncoding);
}

// The scan skips 8 bytes at a time where nothing can change: whatever must change is found at
// every offset within and across those words, and look-alikes never trigger a rewrite.
TEST(PathNormalizerTest, FindsWhatMustChangeAtEveryOffset) {
  constexpr std::string_view kTriggers[] = {"%6c", "%2f", "/./", "//", "/../", "/.", "%zz", "%"};
  constexpr std::string_view kLookAlikes[] = {"%2F",    "/.x", "/..x", "/...",
                                              "%C3%A9", ".",   "..",   "/x."};
  for (std::size_t length = 0; length <= 24; ++length) {
    const std::string head = "/" + repeat("a", length);
    for (const auto trigger : kTriggers) {
      for (const std::string_view tail : {"", "/bcdefghijklmnop"}) {
        const std::string path = head + std::string(trigger) + std::string(tail);
        SCOPED_TRACE(path);
        std::string oracle;
        const auto expected = sluice::testing::naive_normalize_path(path, kMerge, oracle);
        ASSERT_NE(expected, S::kUnchanged);
        const auto outcome = normalize(path, kMerge);
        ASSERT_EQ(outcome.status, expected);
        if (expected == S::kRewritten) {
          ASSERT_EQ(outcome.normal, oracle);
        }
      }
    }
    for (const auto look_alike : kLookAlikes) {
      const std::string path = head + "z" + std::string(look_alike) + "/bcdefghij";
      EXPECT_EQ(normalize(path, kMerge).status, S::kUnchanged) << path;
    }
  }
}

TEST(PathNormalizerTest, ReusesTheCallersBufferAndReplacesItsContent) {
  std::string out;
  out.reserve(256);
  const char* const storage = out.data();
  ASSERT_EQ(normalize_path("/api/v1/./users//%6de", kMerge, out), S::kRewritten);
  EXPECT_EQ(out, "/api/v1/users/me");
  ASSERT_EQ(normalize_path("/b/../a", kMerge, out), S::kRewritten);
  EXPECT_EQ(out, "/a");  // the previous content is gone
  EXPECT_EQ(out.data(), storage);
  ASSERT_EQ(normalize_path("/untouched", kMerge, out), S::kUnchanged);
  EXPECT_EQ(out, "/a");
}

// Pseudo-random paths built from the pieces the rules care about. std::mt19937_64 is fully
// specified by the standard, so the paths are the same on every platform and every run.
class PathGenerator {
 public:
  std::string next() {
    static constexpr std::string_view kPieces[] = {
        "/",  "/",   "a",   "b",   "api",  ".",   "..",  "%2e",    "%2E",   "%2F", "%2f", "%41",
        "~",  "%7e", "%00", "%5c", "%5C",  "%25", "%c3", "%C3",    "-",     "_",   "%zz", "%",
        "%4", "%2",  "//",  "/./", "/../", "/.",  "/..", "%2e%2e", "x%2Fy", "%6C", "%6c", "."};
    constexpr std::size_t kCount = std::size(kPieces);
    // Mostly valid: an invalid escape in every piece would make most paths kBadEncoding.
    std::string path = engine_() % 16 == 0 ? "" : "/";
    const auto length = engine_() % 12;
    for (std::uint64_t i = 0; i < length; ++i) {
      auto piece = kPieces[engine_() % kCount];
      if ((piece == "%zz" || piece == "%" || piece == "%4" || piece == "%2") &&
          engine_() % 8 != 0) {
        piece = "/";
      }
      path += piece;
    }
    return path;
  }

 private:
  std::mt19937_64 engine_{20240611};
};

TEST(PathNormalizerPropertyTest, AgreesWithTheOracleAndIsIdempotent) {
  constexpr int kPaths = 5000;
  PathGenerator generator;
  std::vector<int> seen(4, 0);
  for (int i = 0; i < kPaths; ++i) {
    const std::string path = generator.next();
    for (const bool merge : {kMerge, kKeep}) {
      SCOPED_TRACE(::testing::Message() << "path \"" << path << "\" merge_slashes " << merge);
      const auto outcome = normalize(path, merge);
      ++seen[static_cast<std::size_t>(outcome.status)];
      std::string oracle;
      const auto oracle_status = sluice::testing::naive_normalize_path(path, merge, oracle);
      ASSERT_EQ(outcome.status, oracle_status);
      if (outcome.status == S::kRewritten) {
        ASSERT_EQ(outcome.normal, oracle);
      }
      if (outcome.status == S::kRewritten || outcome.status == S::kUnchanged) {
        // Idempotence; and a form normal with merged slashes is normal without merging too
        // (config relies on this when merge_slashes is unknown).
        ASSERT_EQ(normalize(outcome.normal, merge).status, S::kUnchanged);
        ASSERT_EQ(normalize(outcome.normal, kKeep).status, S::kUnchanged);
      }
    }
  }
  // The generator must exercise every outcome, or the properties prove little.
  for (const auto status : {S::kUnchanged, S::kRewritten, S::kAboveRoot, S::kBadEncoding}) {
    EXPECT_GE(seen[static_cast<std::size_t>(status)], kPaths / 20) << to_string(status);
  }
}

}  // namespace
}  // namespace sluice::http1
