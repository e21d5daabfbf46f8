// SPDX-License-Identifier: Apache-2.0
// What a fleet shares of a document, and carrying one replica's change onto a newer version.
#include "gateway/fleet/fleet_document.hpp"

#include <gtest/gtest.h>

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

TEST(FleetDocumentTest, ObjectsOnTheWayAreCreatedAndScalarsOnTheWayReplaced) {
  const std::vector<Edit> edits = {{{"limits", "p", "requests"}, Document(3)}};
  EXPECT_EQ(apply_edits(Document::object(), edits), doc(R"({"limits": {"p": {"requests": 3}}})"));
  EXPECT_EQ(apply_edits(doc(R"({"limits": 7})"), edits),
            doc(R"({"limits": {"p": {"requests": 3}}})"));
}

}  // namespace
}  // namespace sluice::fleet
