// SPDX-License-Identifier: Apache-2.0
// ConfigDocument: the operator's text, validated as a whole, kept in its own key order.
#include "gateway/config/config_document.hpp"

#include <gtest/gtest.h>

#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kText = R"({
  "routes": [{"prefix": "/api", "name": "api", "backend": "b"}],
  "backends": {"b": {"endpoints": ["127.0.0.1:9001"]}},
  "limits": {"z": {"window_ms": 1000, "requests": 5}, "a": {"requests": 1, "window_ms": 1000}}
})";

TEST(ConfigDocumentTest, KeepsTheOperatorsKeyOrderAndWritesItBack) {
  const auto loaded = ConfigDocument::from_text(kText);
  ASSERT_TRUE(loaded.ok()) << to_string(loaded.problems.front());
  const std::string text = loaded.document->text();
  EXPECT_LT(text.find("\"routes\""), text.find("\"backends\""));
  EXPECT_LT(text.find("\"z\""), text.find("\"a\""));
  EXPECT_LT(text.find("\"prefix\""), text.find("\"name\""));
  EXPECT_EQ(text.back(), '\n');
  // The written text is the same document, and nothing was added (no defaults).
  EXPECT_EQ(ordered_json::parse(text), loaded.document->json());
  EXPECT_FALSE(loaded.document->json()["limits"]["z"].contains("buckets"));
  EXPECT_EQ(loaded.document->config().limits.at("z").requests, 5U);
}

TEST(ConfigDocumentTest, ValidatesTheWholeDocumentAfterAnEdit) {
  auto document = ConfigDocument::from_text(kText).document->json();
  document["routes"][0]["limit"] = "missing";
  document["limits"]["a"]["requests"] = 0;
  const auto edited = ConfigDocument::from_json(document);
  ASSERT_FALSE(edited.ok());
  ASSERT_EQ(edited.problems.size(), 2U);
  EXPECT_EQ(to_string(edited.problems[0]), "limits.a.requests: must be between 1 and 4294967295");
  EXPECT_EQ(to_string(edited.problems[1]), "routes[0].limit: no such policy");
}

TEST(ConfigDocumentTest, ReportsDuplicateKeysAndSyntaxErrorsLikeTheLoader) {
  const auto duplicated = ConfigDocument::from_text(
      R"({"backends": {"b": {"endpoints": ["127.0.0.1:1"]}}, "routes": [], "routes": []})");
  ASSERT_FALSE(duplicated.ok());
  EXPECT_EQ(to_string(duplicated.problems.front()), "routes: duplicate key");
  const auto broken = ConfigDocument::from_text("{\n  \"routes\": [\n}");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.problems.front().path, "(root)");
  EXPECT_NE(broken.problems.front().message.find("line 3"), std::string::npos);
}

TEST(ConfigDocumentTest, AnUnreadableFileIsOneProblemAtItsPath) {
  const auto loaded = ConfigDocument::from_file("/nonexistent/sluice.json");
  ASSERT_EQ(loaded.problems.size(), 1U);
  EXPECT_EQ(to_string(loaded.problems[0]),
            "/nonexistent/sluice.json: cannot read: No such file or directory");
}

}  // namespace
}  // namespace sluice::config
