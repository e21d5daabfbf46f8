// SPDX-License-Identifier: Apache-2.0
// What a fleet shares of a document, and carrying one replica's change onto a newer version.
#include "gateway/fleet/fleet_document.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace sluice::fleet {
namespace {

Document doc(const char* text) {
  return Document::parse(text);
}

TEST(FleetDocumentTest, TheSharedPartIsTheSharedSectionsOnly) {
  const Document d = doc(R"({"listeners": [1], "limits": {"p": 1}, "threads": 2,
                             "routes": [], "backends": {"b": {}}})");
  EXPECT_EQ(shared_part(d), doc(R"({"limits": {"p": 1}, "routes": [], "backends": {"b": {}}})"));
}

TEST(FleetDocumentTest, TheSharedPartDumpsAndComparesWithoutACopy) {
  const Document d = doc(R"({"listeners": [1], "routes": [], "limits": {"p": 1}, "threads": 2,
                             "backends": {"b": {}}})");
  EXPECT_EQ(dump_shared_part(d), shared_part(d).dump());
  EXPECT_EQ(dump_shared_part(doc(R"({"threads": 2})")), "{}");
  EXPECT_TRUE(has_shared_part(d, shared_part(d)));
  EXPECT_TRUE(
      has_shared_part(d, doc(R"({"routes": [], "backends": {"b": {}}, "limits": {"p": 1}})")));
  EXPECT_FALSE(has_shared_part(d, doc(R"({"limits": {"p": 1}, "routes": []})")));  // one short
  EXPECT_FALSE(
      has_shared_part(d, doc(R"({"limits": {"p": 2}, "routes": [], "backends": {"b": {}}})")));
  EXPECT_FALSE(has_shared_part(d, doc(R"({"limits": {"p": 1}, "routes": [], "backends": {"b": {}},
                                          "threads": 2})")));  // not a shared part
  EXPECT_FALSE(has_shared_part(d, Document::array()));
}

TEST(FleetDocumentTest, WithSharedReplacesInPlaceAndDropsWhatTheFleetLacks) {
  const Document local = doc(R"({"listeners": [1], "limits": {"p": 1}, "overrides": {"p": {}},
                                 "threads": 2})");
  const Document merged = with_shared(local, doc(R"({"limits": {"q": 2}, "routes": []})"));
  EXPECT_EQ(merged.dump(), doc(R"({"listeners": [1], "limits": {"q": 2}, "threads": 2,
                                   "routes": []})")
                               .dump());  // the order as written, new sections last
}

TEST(FleetDocumentTest, EditsGoDownThroughObjectsAndReplaceArraysWhole) {
  const Document base = doc(R"({"limits": {"p": {"requests": 1, "window_ms": 60000}},
                                "routes": [{"name": "a"}], "overrides": {"p": {"x": 1}}})");
  const Document next = doc(R"({"limits": {"p": {"requests": 2, "window_ms": 60000}},
                                "routes": [{"name": "a"}, {"name": "b"}], "overrides": {"p": {}}})");
  const auto edits = edits_between(base, next);
  ASSERT_EQ(edits.size(), 3U);
  EXPECT_EQ(edits[0], (Edit{{"limits", "p", "requests"}, Document(2)}));
  EXPECT_EQ(edits[1].path, (std::vector<std::string>{"routes"}));
  EXPECT_EQ(edits[2], (Edit{{"overrides", "p", "x"}, std::nullopt}));
  EXPECT_EQ(apply_edits(base, edits), next);
}

TEST(FleetDocumentTest, AChangeCarriedOntoANewerVersionKeepsTheOtherReplicasChange) {
  const Document base = doc(R"({"overrides": {"p": {"a": 1}}})");
  const Document mine = doc(R"({"overrides": {"p": {"a": 1, "b": 2}}})");
  const Document theirs = doc(R"({"overrides": {"p": {"a": 1, "c": 3}}})");
  EXPECT_EQ(apply_edits(theirs, edits_between(base, mine)),
            doc(R"({"overrides": {"p": {"a": 1, "c": 3, "b": 2}}})"));
  // Both added a section neither base had: both sets of members stay.
  EXPECT_EQ(apply_edits(doc(R"({"overrides": {"p": {"c": 3}}})"),
                        edits_between(doc("{}"), doc(R"({"overrides": {"p": {"b": 2}}})"))),
            doc(R"({"overrides": {"p": {"c": 3, "b": 2}}})"));
  // A removal of something the other replica already removed is no change.
  EXPECT_EQ(apply_edits(doc(R"({"overrides": {}})"),
                        edits_between(base, doc(R"({"overrides": {"p": {}}})"))),
            doc(R"({"overrides": {}})"));
}

// shared_edits_between reads the shared sections in place: the edits edits_between finds
// between the two shared parts, each once (grouped by section), whatever changed.
TEST(FleetDocumentTest, SharedEditsAreTheEditsBetweenTheSharedParts) {
  const Document base = doc(R"({"listeners": [1], "limits": {"p": {"requests": 1}},
      "overrides": {"p": {"a": {"requests": 1}, "b": {"requests": 2}}}, "threads": 2,
      "routes": [{"name": "a"}], "tiers": {"p": {"gold": {"requests": 5}}}, "identity": [1],
      "backends": "not an object"})");
  const std::vector<Document> nexts = {
      base,
      doc(R"({"listeners": [2], "limits": {"p": {"requests": 1}},
          "overrides": {"p": {"a": {"requests": 1}, "b": {"requests": 3}, "c": {"requests": 4}}},
          "threads": 3, "routes": [{"name": "a"}], "tiers": {"p": {"gold": {"requests": 5}}},
          "identity": [1], "backends": "not an object"})"),
      doc(R"({"overrides": {"q": {"x": {"requests": 1}}}, "auth": {"jwt": {}},
          "routes": [], "backends": {"b": {}}, "limits": 7})"),
      doc(R"({"threads": 2})"),
      doc(R"({"limits": {"p": {"requests": 2}}, "overrides": {}, "tiers": [],
          "routes": [{"name": "a"}], "identity": [1], "backends": "not an object"})"),
  };
  const auto dumps = [](const std::vector<Edit>& edits) {
    std::multiset<std::string> out;
    for (const auto& edit : edits) {
      out.insert(Document(edit.path).dump() + (edit.value ? edit.value->dump() : "-"));
    }
    return out;
  };
  for (const auto& next : nexts) {
    SCOPED_TRACE(next.dump());
    const auto expected = edits_between(shared_part(base), shared_part(next));
    const auto edits = shared_edits_between(base, next);
    EXPECT_EQ(dumps(edits), dumps(expected));
    // The same members (a section the edits add comes in their order: not compared).
    EXPECT_EQ(nlohmann::json(apply_edits(shared_part(base), edits)),
              nlohmann::json(shared_part(next)));
    EXPECT_EQ(dumps(shared_edits_between(next, base)),
              dumps(edits_between(shared_part(next), shared_part(base))));
  }
}

TEST(FleetDocumentTest, ObjectsOnTheWayAreCreatedAndScalarsOnTheWayReplaced) {
  const std::vector<Edit> edits = {{{"limits", "p", "requests"}, Document(3)}};
  EXPECT_EQ(apply_edits(Document::object(), edits), doc(R"({"limits": {"p": {"requests": 3}}})"));
  EXPECT_EQ(apply_edits(doc(R"({"limits": 7})"), edits),
            doc(R"({"limits": {"p": {"requests": 3}}})"));
}

}  // namespace
}  // namespace sluice::fleet
