// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/config_changes.hpp"

#include <gtest/gtest.h>

#include "gateway/config/config_document.hpp"

namespace sluice::insight {
namespace {

using nlohmann::ordered_json;
using Op = ConfigChange::Op;

std::string test_label(std::string_view key) {
  return "L(" + std::string(key.size(), '*') + ")";
}

std::vector<ConfigChange> diff(const ordered_json& before, const ordered_json& after) {
  return config_changes(before, after, test_label);
}

TEST(ConfigChangesTest, IdenticalDocumentsHaveNoChange) {
  const ordered_json doc = {{"limits", {{"standard", {{"requests", 100}}}}}};
  EXPECT_TRUE(diff(doc, doc).empty());
  EXPECT_EQ(summarize({}), "no change");
}

TEST(ConfigChangesTest, ReportsAScalarReplaceWithItsCheckPath) {
  const ordered_json before = {
      {"limits", {{"standard", {{"requests", 100}, {"window_ms", 60000}}}}}};
  ordered_json after = before;
  after["limits"]["standard"]["requests"] = 50;
  const auto changes = diff(before, after);
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0], (ConfigChange{Op::kReplace, "limits.standard.requests", 100, 50}));
  EXPECT_EQ(summarize(changes), "limits.standard.requests 100 -> 50");
  EXPECT_EQ(to_json(changes), nlohmann::json::parse(R"([{"op":"replace",
      "path":"limits.standard.requests","from":100,"to":50}])"));
}

TEST(ConfigChangesTest, AddsAndRemovesWholeMembersInDocumentOrder) {
  const ordered_json before = {{"limits", {{"a", {{"requests", 1}}}, {"b", {{"requests", 2}}}}}};
  const ordered_json after = {{"limits", {{"b", {{"requests", 3}}}, {"c", {{"requests", 4}}}}}};
  const auto changes = diff(before, after);
  ASSERT_EQ(changes.size(), 3U);
  EXPECT_EQ(changes[0], (ConfigChange{Op::kRemove, "limits.a", {{"requests", 1}}, nullptr}));
  EXPECT_EQ(changes[1], (ConfigChange{Op::kReplace, "limits.b.requests", 2, 3}));
  EXPECT_EQ(changes[2], (ConfigChange{Op::kAdd, "limits.c", nullptr, {{"requests", 4}}}));
  EXPECT_EQ(summarize(changes), "limits.a removed, +2 more");
  const auto json = to_json(changes);
  EXPECT_FALSE(json[0].contains("to"));    // a remove has only "from"
  EXPECT_FALSE(json[2].contains("from"));  // an add has only "to"
}

TEST(ConfigChangesTest, ComparesArraysElementByElement) {
  const ordered_json before = {
      {"routes", {{{"name", "a"}, {"limit", "p"}}, {{"name", "b"}, {"limit", "p"}}}}};
  const ordered_json after = {
      {"routes",
       {{{"name", "a"}, {"limit", "q"}}, {{"name", "b"}, {"limit", "p"}}, {{"name", "c"}}}}};
  const auto changes = diff(before, after);
  ASSERT_EQ(changes.size(), 2U);
  EXPECT_EQ(changes[0].path, "routes[0].limit");
  EXPECT_EQ(changes[1], (ConfigChange{Op::kAdd, "routes[2]", nullptr, {{"name", "c"}}}));
  EXPECT_EQ(diff(after, before).back(),
            (ConfigChange{Op::kRemove, "routes[2]", {{"name", "c"}}, nullptr}));
}

TEST(ConfigChangesTest, ATypeChangeIsOneReplace) {
  const auto changes = diff({{"threads", 2}}, {{"threads", {{"n", 2}}}});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].op, Op::kReplace);
  EXPECT_EQ(changes[0].path, "threads");
}

TEST(ConfigChangesTest, QuotesKeysThatAreNotPlain) {
  const auto changes = diff({{"backends", ordered_json::object()}},
                            {{"backends", {{"a.b", {{"endpoints", ordered_json::array()}}}}}});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].path, R"(backends["a.b"])");
}

TEST(ConfigChangesTest, OverrideKeysAppearOnlyAsLabels) {
  const ordered_json before = {{"overrides", {{"p", {{"secret-key-1", {{"requests", 5}}}}}}}};
  const ordered_json after = {
      {"overrides",
       {{"p", {{"secret-key-1", {{"requests", 6}}}, {"other-key", {{"requests", 7}}}}}}}};
  const auto changes = diff(before, after);
  ASSERT_EQ(changes.size(), 2U);
  EXPECT_EQ(changes[0].path, "overrides.p[\"L(************)\"].requests");
  EXPECT_EQ(changes[1].path, "overrides.p[\"L(*********)\"]");
  // Whole objects holding keys, added or removed, are relabelled inside too.
  for (const auto& change : diff({{"limits", 1}}, after)) {
    const std::string text = to_json({change}).dump() + summarize({change});
    EXPECT_EQ(text.find("secret-key-1"), std::string::npos) << text;
    EXPECT_EQ(text.find("other-key"), std::string::npos) << text;
  }
  const auto removed = diff(after, ordered_json::object());
  ASSERT_EQ(removed.size(), 1U);
  EXPECT_TRUE(removed[0].from["p"].contains("L(************)"));
}

// Members that kept their places are compared pair by pair; members that moved, through an
// index. Both give the same changes, in the same order.
TEST(ConfigChangesTest, MembersInPlaceAndMembersMovedGiveTheSameChanges) {
  ordered_json before = {{"overrides", {{"p", ordered_json::object()}}}};
  for (int i = 0; i < 40; ++i) {
    before["overrides"]["p"]["key-" + std::to_string(i)] = {{"requests", i}};
  }
  ordered_json in_place = before;
  in_place["overrides"]["p"]["key-7"]["requests"] = 700;
  in_place["overrides"]["p"]["new-key"] = {{"requests", 1}};
  ordered_json moved = {{"overrides", {{"p", ordered_json::object()}}}};
  for (int i = 39; i >= 0; --i) {
    moved["overrides"]["p"]["key-" + std::to_string(i)] = {{"requests", i == 7 ? 700 : i}};
  }
  moved["overrides"]["p"]["new-key"] = {{"requests", 1}};
  const auto expected = std::vector<ConfigChange>{
      {Op::kReplace, "overrides.p[\"L(*****)\"].requests", 7, 700},
      {Op::kAdd, "overrides.p[\"L(*******)\"]", nullptr, {{"requests", 1}}},
  };
  EXPECT_EQ(diff(before, in_place), expected);
  EXPECT_EQ(diff(before, moved), expected);
  // A member removed from the middle: every later member moved up, the index finds them.
  ordered_json removed = before;
  removed["overrides"]["p"].erase("key-3");
  const auto changes = diff(before, removed);
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0],
            (ConfigChange{Op::kRemove, "overrides.p[\"L(*****)\"]", {{"requests", 3}}, nullptr}));
  // Fewer members after than before, the rest in place: a remove at the end.
  const auto shrunk = diff(in_place, before);
  ASSERT_EQ(shrunk.size(), 2U);
  EXPECT_EQ(shrunk[0].path, "overrides.p[\"L(*****)\"].requests");
  EXPECT_EQ(shrunk[1].op, Op::kRemove);
}

TEST(ConfigChangesTest, SummaryShortensLongValues) {
  const std::string long_text(200, 'x');
  const auto changes = diff({{"a", "short"}}, {{"a", long_text}});
  const std::string line = summarize(changes);
  EXPECT_LT(line.size(), 100U);
  EXPECT_NE(line.find("a \"short\" -> \"xxx"), std::string::npos) << line;
  EXPECT_EQ(summarize(diff({{"x", 1}}, {{"x", 1}, {"y", 2}})), "y = 2 (added)");
}

TEST(ConfigChangesTest, RestartOnlyFieldsAreNamedAndKeptFromTheRunningDocument) {
  const ordered_json running = {{"admin", {{"port", 9901}}}, {"threads", 2}, {"limits", {}}};
  ordered_json next = {{"listen", {{"port", 1}}}, {"admin", {{"port", 1}}}, {"limits", {{"p", 1}}}};
  keep_restart_only(running, next);
  EXPECT_EQ(next,
            (ordered_json{{"admin", {{"port", 9901}}}, {"limits", {{"p", 1}}}, {"threads", 2}}));

  auto a = config::ConfigDocument::from_text(R"({"backends":{"b":{"endpoints":["127.0.0.1:1"]}},
      "routes":[{"name":"r","prefix":"/","backend":"b"}]})");
  auto b = config::ConfigDocument::from_text(R"({"threads":3,"admin":{"port":9999},
      "backends":{"b":{"endpoints":["127.0.0.1:1"]}},"routes":[{"name":"r","prefix":"/","backend":"b"}]})");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(restart_only_changes(a.document->config(), b.document->config()),
            (std::vector<std::string>{"admin", "threads"}));
  EXPECT_TRUE(restart_only_changes(a.document->config(), a.document->config()).empty());
}

}  // namespace
}  // namespace sluice::insight
