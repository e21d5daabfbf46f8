// SPDX-License-Identifier: Apache-2.0
// Transfer-Encoding read strictly, every line as one list (docs/http-conformance.md,
// "Transfer-Encoding").
#include "gateway/http1/transfer_codings.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>

namespace sluice::http1 {
namespace {

/// The codings of `lines` (one Transfer-Encoding field value each), or "<refused>".
std::string read(std::initializer_list<std::string_view> lines) {
  TransferCodings codings;
  for (const std::string_view line : lines) {
    if (!codings.add(line)) {
      return "<refused>";
    }
  }
  return std::string(codings.text());
}

TEST(TransferCodingsTest, ReadsCodingsAndWritesThemInOneCanonicalForm) {
  EXPECT_EQ(read({"chunked"}), "chunked");
  EXPECT_EQ(read({"Chunked"}), "chunked");
  EXPECT_EQ(read({"gzip,chunked"}), "gzip, chunked");
  EXPECT_EQ(read({"gzip \t,\t chunked"}), "gzip, chunked");
  // Empty elements are skipped (RFC 9110 §5.6.1 asks recipients to).
  EXPECT_EQ(read({", gzip,, chunked ,"}), "gzip, chunked");
  // Parameters on a coding other than chunked: token or quoted-string values, BWS around "=".
  EXPECT_EQ(read({"x-c;Level=1 ; b = \"q,\\\"s\" , chunked"}),
            "x-c;level=1;b=\"q,\\\"s\", chunked");
}

TEST(TransferCodingsTest, EveryLineJoinsTheOneList) {
  EXPECT_EQ(read({"gzip", "chunked"}), "gzip, chunked");
  EXPECT_EQ(read({"identity", "chunked"}), "identity, chunked");
}

TEST(TransferCodingsTest, AnythingOutsideTheGrammarRefusesTheWholeList) {
  // The shapes an outside desync run sent: each looked like a list ending in chunked to a
  // reader that stops at the first malformed element.
  for (const std::string_view bad :
       {"chunked identity", "chunked;x", "chunked, \"x\"", "chunked/1.1", "chunked\xff",
        "chunked chunked", "\"chunked\"", "gzip;", "gzip;a=", "gzip;=1", "gzip;a=\"open",
        "gzip;a=\"bad\x7f\"", "gzip;a=b c", "chun ked", "chunked\x01"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(read({bad}), "<refused>");
  }
  // A field that names no coding at all, alone or before a real one.
  EXPECT_EQ(read({""}), "<refused>");
  EXPECT_EQ(read({" , "}), "<refused>");
  EXPECT_EQ(read({"", "chunked"}), "<refused>");
}

TEST(TransferCodingsTest, ChunkedTakesNoParameters) {
  EXPECT_EQ(read({"chunked;a=1"}), "<refused>");
  EXPECT_EQ(read({"gzip;a=1, chunked"}), "gzip;a=1, chunked");
}

TEST(TransferCodingsTest, CountsChunkedAndKnowsWhetherItIsFinal) {
  TransferCodings once;
  ASSERT_TRUE(once.add("gzip, chunked"));
  EXPECT_TRUE(once.chunked_final());
  TransferCodings twice;
  ASSERT_TRUE(twice.add("chunked"));
  ASSERT_TRUE(twice.add("chunked"));
  EXPECT_EQ(twice.chunked_count(), 2U);
  EXPECT_FALSE(twice.chunked_final());
  TransferCodings first;
  ASSERT_TRUE(first.add("chunked, gzip"));
  EXPECT_EQ(first.chunked_count(), 1U);
  EXPECT_FALSE(first.chunked_final());
  TransferCodings none;
  ASSERT_TRUE(none.add("gzip"));
  EXPECT_EQ(none.chunked_count(), 0U);
  EXPECT_FALSE(none.chunked_final());
}

TEST(TransferCodingsTest, WithoutTheFinalChunkedLeavesTheOtherCodings) {
  EXPECT_EQ(without_final_chunked("chunked"), "");
  EXPECT_EQ(without_final_chunked("gzip, chunked"), "gzip");
  EXPECT_EQ(without_final_chunked("gzip"), "gzip");
  EXPECT_EQ(without_final_chunked("x-chunked"), "x-chunked");
}

}  // namespace
}  // namespace sluice::http1
