// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/json_reader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/config/problems.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Json = nlohmann::json;

std::vector<std::string> lines(const Problems& problems) {
  std::vector<std::string> out;
  for (const auto& problem : problems.list()) {
    out.push_back(to_string(problem));
  }
  return out;
}

TEST(ProblemsTest, FormatsPathColonMessage) {
  EXPECT_EQ(to_string(Problem{"routes[0].backend", "no such backend"}),
            "routes[0].backend: no such backend");
}

TEST(ProblemsTest, BuildsMemberAndElementPaths) {
  EXPECT_EQ(member_path("", "limits"), "limits");
  EXPECT_EQ(member_path("limits", "standard"), "limits.standard");
  EXPECT_EQ(member_path("overrides.standard", "partner-42"), "overrides.standard.partner-42");
  EXPECT_EQ(element_path("routes", 0), "routes[0]");
  EXPECT_EQ(member_path(element_path("backends.users.endpoints", 1), "x"),
            "backends.users.endpoints[1].x");
}

TEST(ProblemsTest, QuotesKeysThatAreNotPlainIdentifiers) {
  EXPECT_EQ(member_path("overrides.standard", "a.b"), R"(overrides.standard["a.b"])");
  EXPECT_EQ(member_path("overrides.standard", ""), R"(overrides.standard[""])");
  EXPECT_EQ(member_path("o", "say \"hi\"\n"), R"(o["say \"hi\"\n"])");
  EXPECT_EQ(member_path("", "a b"), R"(["a b"])");
  EXPECT_EQ(member_path("o", "caf\xc3\xa9"), "o[\"caf\xc3\xa9\"]");
  EXPECT_EQ(member_path("o", "bad\xff"), "o[\"bad\xef\xbf\xbd\"]");  // invalid UTF-8 replaced
}

TEST(ProblemsTest, RecordsAnEmptyPathAsRoot) {
  Problems problems;
  problems.add("", "must be an object");
  EXPECT_THAT(lines(problems), ElementsAre("(root): must be an object"));
}

TEST(ObjectReaderTest, ReadsTypedValuesAndDefaultsAbsentOnes) {
  const auto object = Json::parse(
      R"({"i": 7, "d": 2.5, "s": "x", "b": true, "n": null, "ms": 250, "o": {}, "a": []})");
  Problems problems;
  ObjectReader reader(object, "sec", problems);
  EXPECT_EQ(reader.integer<int>("i", 0, 10), 7);
  EXPECT_EQ(reader.number("d", 0.0, 10.0), 2.5);
  EXPECT_EQ(reader.string("s"), "x");
  EXPECT_EQ(reader.boolean("b"), true);
  EXPECT_EQ(reader.nullable_string("n"), std::nullopt);
  EXPECT_EQ(reader.duration_ms("ms", 1, 1000), 250ms);
  EXPECT_NE(reader.object("o"), nullptr);
  EXPECT_NE(reader.array("a"), nullptr);
  EXPECT_EQ(reader.integer<int>("absent", 0, 10), std::nullopt);
  reader.finish();
  EXPECT_THAT(lines(problems), IsEmpty());
}

TEST(ObjectReaderTest, ReportsWrongTypes) {
  const auto object =
      Json::parse(R"({"i": "7", "d": "2.5", "s": 1, "b": 0, "n": 1, "o": [], "a": {}, "na": 1})");
  Problems problems;
  ObjectReader reader(object, "sec", problems);
  EXPECT_EQ(reader.integer<int>("i", 0, 10), std::nullopt);
  EXPECT_EQ(reader.number("d", 0.0, 10.0), std::nullopt);
  EXPECT_EQ(reader.string("s"), std::nullopt);
  EXPECT_EQ(reader.boolean("b"), std::nullopt);
  EXPECT_EQ(reader.nullable_string("n"), std::nullopt);
  EXPECT_EQ(reader.object("o"), nullptr);
  EXPECT_EQ(reader.array("a"), nullptr);
  EXPECT_EQ(reader.nullable_array("na"), nullptr);
  reader.finish();
  EXPECT_THAT(lines(problems),
              ElementsAre("sec.i: must be an integer", "sec.d: must be a number",
                          "sec.s: must be a string", "sec.b: must be a boolean",
                          "sec.n: must be a string or null", "sec.o: must be an object",
                          "sec.a: must be an array", "sec.na: must be an array or null"));
}

TEST(ObjectReaderTest, ReportsRangesWithNumbersPrintedPlainly) {
  const auto object = Json::parse(R"({"i": 11, "k": 0.5, "p": 2e6, "f": 0.25})");
  Problems problems;
  ObjectReader reader(object, "", problems);
  EXPECT_EQ(reader.integer<int>("i", 1, 10), std::nullopt);
  EXPECT_EQ(reader.number("k", 1.0, 100.0), std::nullopt);
  EXPECT_EQ(reader.number("p", 0.0, 1000000.0), std::nullopt);
  EXPECT_EQ(reader.number("f", 0.5, 1.5), std::nullopt);
  reader.finish();
  EXPECT_THAT(lines(problems),
              ElementsAre("i: must be between 1 and 10", "k: must be between 1 and 100",
                          "p: must be between 0 and 1000000", "f: must be between 0.5 and 1.5"));
}

TEST(ObjectReaderTest, AcceptsIntegersForNumbers) {
  const auto object = Json::parse(R"({"k": 2})");
  Problems problems;
  ObjectReader reader(object, "", problems);
  EXPECT_EQ(reader.number("k", 1.0, 100.0), 2.0);
  reader.finish();
  EXPECT_THAT(lines(problems), IsEmpty());
}

TEST(ObjectReaderTest, ReportsMissingRequiredFields) {
  const auto object = Json::object();
  Problems problems;
  ObjectReader reader(object, "limits.p", problems);
  EXPECT_EQ(reader.integer<int>("requests", 1, 10, Presence::kRequired), std::nullopt);
  EXPECT_EQ(reader.array("endpoints", Presence::kRequired), nullptr);
  reader.finish();
  EXPECT_THAT(lines(problems),
              ElementsAre("limits.p.requests: is required", "limits.p.endpoints: is required"));
}

TEST(ObjectReaderTest, ReportsEveryUnconsumedKeyAsUnknown) {
  const auto object = Json::parse(R"({"known": 1, "typo": 2, "a.b": 3})");
  Problems problems;
  ObjectReader reader(object, "sec", problems);
  EXPECT_TRUE(reader.has("known"));
  EXPECT_NE(reader.take("known"), nullptr);
  reader.finish();
  EXPECT_THAT(lines(problems),
              ElementsAre(R"(sec["a.b"]: unknown field)", "sec.typo: unknown field"));
}

TEST(ObjectReaderTest, ReadsEnumerationsBySpelling) {
  const auto object = Json::parse(R"({"good": "least_request", "bad": "fastest", "num": 1})");
  Problems problems;
  ObjectReader reader(object, "b", problems);
  constexpr std::array kAll{Balance::kRoundRobin, Balance::kLeastRequest, Balance::kRandom};
  EXPECT_EQ(reader.enumeration("good", kAll), Balance::kLeastRequest);
  EXPECT_EQ(reader.enumeration("bad", kAll), std::nullopt);
  EXPECT_EQ(reader.enumeration("num", kAll), std::nullopt);
  EXPECT_EQ(reader.enumeration("absent", kAll), std::nullopt);
  reader.finish();
  const std::string message = R"(must be one of "round_robin", "least_request", "random")";
  EXPECT_THAT(lines(problems), ElementsAre("b.bad: " + message, "b.num: " + message));
}

TEST(ObjectReaderTest, NestedReaderUsesTheMemberPathAndFinishes) {
  const auto object = Json::parse(R"({"inner": {"x": 1, "y": 2}, "flat": 3})");
  Problems problems;
  ObjectReader reader(object, "outer", problems);
  int x = 0;
  EXPECT_TRUE(reader.nested(
      "inner", [&](ObjectReader& inner) { x = inner.integer<int>("x", 0, 9).value_or(-1); }));
  EXPECT_FALSE(reader.nested("flat", [](ObjectReader&) { FAIL(); }));
  EXPECT_FALSE(reader.nested("absent", [](ObjectReader&) { FAIL(); }));
  reader.finish();
  EXPECT_EQ(x, 1);
  EXPECT_THAT(lines(problems),
              ElementsAre("outer.inner.y: unknown field", "outer.flat: must be an object"));
}

}  // namespace
}  // namespace sluice::config
