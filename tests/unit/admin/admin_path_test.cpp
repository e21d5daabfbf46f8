// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/admin_path.hpp"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

using Segments = std::vector<std::string>;

TEST(AdminPathTest, SplitsAndDecodesEachSegmentAndDropsTheQuery) {
  EXPECT_EQ(path_segments("/admin/limits/std/keys/a%2Fb%20c?x=1"),
            (Segments{"admin", "limits", "std", "keys", "a/b c"}));
  EXPECT_EQ(path_segments("/admin/config"), (Segments{"admin", "config"}));
  EXPECT_EQ(path_segments("/admin/limits/"), (Segments{"admin", "limits", ""}));
  EXPECT_EQ(path_segments("/"), (Segments{""}));
  EXPECT_EQ(path_segments("/a/%7e%7E"), (Segments{"a", "~~"}));
}

TEST(AdminPathTest, RejectsBadEncodingAndRelativeTargets) {
  EXPECT_FALSE(path_segments("/admin/limits/%"));
  EXPECT_FALSE(path_segments("/admin/limits/%2"));
  EXPECT_FALSE(path_segments("/admin/limits/%zz"));
  EXPECT_FALSE(path_segments("admin/limits"));
  EXPECT_FALSE(path_segments(""));
  EXPECT_FALSE(path_segments("http://host/admin"));
}

TEST(AdminPathTest, AcceptsUtf8AndRejectsIllFormedBytes) {
  EXPECT_EQ(path_segments("/k/caf%C3%A9"), (Segments{"k", "caf\xC3\xA9"}));
  EXPECT_EQ(path_segments("/k/%F0%9F%98%80"), (Segments{"k", "\xF0\x9F\x98\x80"}));
  EXPECT_FALSE(path_segments("/k/%FF"));           // never valid
  EXPECT_FALSE(path_segments("/k/%C3"));           // truncated
  EXPECT_FALSE(path_segments("/k/%C0%AF"));        // overlong "/"
  EXPECT_FALSE(path_segments("/k/%ED%A0%80"));     // a surrogate
  EXPECT_FALSE(path_segments("/k/%F4%90%80%80"));  // above U+10FFFF
}

TEST(AdminPathTest, FindsAQueryParameterDecoded) {
  EXPECT_EQ(query_parameter("/admin/limits/p?dry_run=true", "dry_run"), "true");
  EXPECT_EQ(query_parameter("/a?x=1&dry_run=false&dry_run=true", "dry_run"), "false");  // first
  EXPECT_EQ(query_parameter("/a?dry%5Frun=a%20b", "dry_run"), "a b");
  EXPECT_EQ(query_parameter("/a?dry_run", "dry_run"), "");
  EXPECT_EQ(query_parameter("/a?dry_run=", "dry_run"), "");
  EXPECT_FALSE(query_parameter("/a", "dry_run"));
  EXPECT_FALSE(query_parameter("/a?dry_runs=true", "dry_run"));
  EXPECT_FALSE(query_parameter("/a?dry_run=%zz", "dry_run"));
}

}  // namespace
}  // namespace sluice::admin
