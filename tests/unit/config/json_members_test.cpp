// SPDX-License-Identifier: Apache-2.0
// Linear-time member lookup and parsing of ordered JSON (gateway/config/json_members.hpp).
#include "gateway/config/json_members.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::config {
namespace {

using nlohmann::ordered_json;

ordered_json wide_object(int members) {
  ordered_json object = ordered_json::object();
  for (int i = members; i > 0; --i) {  // not sorted: the order must survive
    object["k" + std::to_string(i)] = {{"requests", i}};
  }
  return object;
}

TEST(MemberIndexTest, FindsEveryMemberOfSmallAndLargeObjects) {
  for (const int members : {0, 3, 8, 9, 500}) {
    const ordered_json object = wide_object(members);
    const MemberIndex index(object);
    for (int i = 1; i <= members; ++i) {
      const auto* found = index.find("k" + std::to_string(i));
      ASSERT_NE(found, nullptr) << members << " members, k" << i;
      EXPECT_EQ((*found)["requests"], i);
    }
    EXPECT_EQ(index.find("k0"), nullptr);
    EXPECT_FALSE(index.contains("absent"));
  }
}

TEST(MemberIndexTest, ANonObjectHasNoMembers) {
  const ordered_json array = ordered_json::array({1, 2});
  EXPECT_EQ(MemberIndex(array).find("0"), nullptr);
  const ordered_json text = "k1";
  EXPECT_EQ(MemberIndex(text).find("k1"), nullptr);
}

TEST(ParseOrderedTest, GivesWhatOrderedJsonParseGives) {
  const std::string texts[] = {
      R"({"z": 1, "a": [true, false, null, -3, 18446744073709551615, 2.5e-3, "s\u00e9"],
          "m": {"y": {}, "b": [], "x": [{"q": 1}, [2, [3]]]}})",
      "[]", "{}", "42", "\"text\"", "null", "[{\"a\": {\"b\": {\"c\": [1, {\"d\": 2}]}}}]",
      // Members after a nested object ended, at every depth (each depth's members wait apart).
      R"({"a": {"b": {"c": 1}, "d": [{"e": {"f": 2}, "g": 3}, {"h": 4}], "i": 5},
          "j": {"k": {"l": {}}, "m": [[{"n": 6}], {"o": {"p": 7}, "q": 8}]}, "r": 9})"};
  for (const auto& text : texts) {
    const ordered_json mine = parse_ordered(text);
    EXPECT_EQ(mine, ordered_json::parse(text)) << text;
    EXPECT_EQ(mine.dump(), ordered_json::parse(text).dump()) << text;  // the same order
  }
  const ordered_json wide = wide_object(5000);
  EXPECT_EQ(parse_ordered(wide.dump()).dump(), wide.dump());
}

TEST(ParseOrderedTest, ARepeatedKeyKeepsItsFirstPlaceAndItsLastValue) {
  const char* text = R"({"a": 1, "b": 2, "a": 3, "c": {"x": 1, "x": {"y": 2}}})";
  EXPECT_EQ(parse_ordered(text).dump(), ordered_json::parse(text).dump());
  EXPECT_EQ(parse_ordered(text).dump(), R"({"a":3,"b":2,"c":{"x":{"y":2}}})");
}

TEST(ParseOrderedTest, InvalidTextIsDiscardedNotThrown) {
  for (const char* text : {"", "{", "{\"a\": }", "[1, 2", "{\"a\": 1} trailing", "nul"}) {
    EXPECT_TRUE(parse_ordered(text).is_discarded()) << text;
  }
}

}  // namespace
}  // namespace sluice::config
