// SPDX-License-Identifier: Apache-2.0
// The tests' Prometheus text-format parser (tests/support/prometheus_text.hpp): what every
// metrics assertion in the suite stands on, so it is tested on its own.
#include "tests/support/prometheus_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace sluice::testing {
namespace {

TEST(ScrapeTest, FindsSeriesByLabelSetWhateverTheOrder) {
  const Scrape s(
      "# HELP x_total Things, with \\\\ and \\n in the help.\n"
      "# TYPE x_total counter\n"
      "x_total{b=\"2\",a=\"1\"} 3\n"
      "x_total{a=\"1\",b=\"3\",} 4 1700000000000\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"+Inf\",route=\"r\"} 7\n"
      "h_count{route=\"r\"} 7\n"
      "h_sum{route=\"r\"} 1.5e-3\n"
      "up 1\n"
      "\n");
  EXPECT_EQ(s.find("x_total", {{"a", "1"}, {"b", "2"}}), 3.0);
  EXPECT_EQ(s.find("x_total", {{"b", "2"}, {"a", "1"}}), 3.0);
  EXPECT_EQ(s.find("x_total", {{"a", "1"}, {"b", "3"}}), 4.0);  // a timestamp is not the value
  EXPECT_EQ(s.find("x_total", {{"a", "1"}}), std::nullopt);     // a label set matches exactly
  EXPECT_EQ(s.find("x_total"), std::nullopt);
  EXPECT_EQ(s.find("x"), std::nullopt);  // a prefix of a name is not the name
  EXPECT_EQ(s.find("h_bucket", {{"route", "r"}, {"le", "+Inf"}}), 7.0);
  EXPECT_EQ(s.value("h_sum", {{"route", "r"}}), 0.0015);
  EXPECT_EQ(s.value("up"), 1.0);
  EXPECT_EQ(s.sum("x_total", {{"a", "1"}}), 7.0);
  EXPECT_EQ(s.sum("x_total"), 7.0);
  EXPECT_EQ(s.sum("nothing"), 0.0);
  EXPECT_EQ(s.type("x_total"), "counter");
  EXPECT_EQ(s.type("h"), "histogram");
  EXPECT_EQ(s.type("up"), "");
  ASSERT_EQ(s.series().size(), 6U);
  EXPECT_EQ(s.series()[0].labels, (Labels{{"a", "1"}, {"b", "2"}}));  // sorted by name
}

TEST(ScrapeTest, AMissingSeriesIsAnErrorThatNamesIt) {
  const Scrape s("x_total{a=\"1\"} 3\nx_total{a=\"2\"} 0\n");
  try {
    (void)s.value("x_total", {{"a", "3"}});
    ADD_FAILURE() << "value() returned for a missing series";
  } catch (const MissingSeries& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(R"(no series x_total{a="3"})"), std::string::npos) << message;
    EXPECT_NE(message.find(R"(x_total{a="1"} 3)"), std::string::npos) << message;
    EXPECT_NE(message.find(R"(x_total{a="2"} 0)"), std::string::npos) << message;
  }
  EXPECT_THROW((void)s.value("y_total"), MissingSeries);
  EXPECT_EQ(s.value("x_total", {{"a", "2"}}), 0.0);  // present at 0 is not missing
}

TEST(ScrapeTest, UnescapesLabelValuesAndKeysThemEscaped) {
  const Scrape s(R"(x{a="q\"uo\\te\n",b="{},= "} 5)");
  EXPECT_EQ(s.value("x", {{"a", "q\"uo\\te\n"}, {"b", "{},= "}}), 5.0);
  EXPECT_EQ(series_key("x", {{"b", "{},= "}, {"a", "q\"uo\\te\n"}}),
            R"(x{a="q\"uo\\te\n",b="{},= "})");
  EXPECT_EQ(series_key("x", {}), "x");
}

TEST(ScrapeTest, AcceptsBlanksBetweenTokensAndSpecialValues) {
  const Scrape s(
      "  spaced { a = \"1\" , b=\"2\" }\t 2.5 \n"
      "nan_value NaN\n"
      "pos_inf +Inf\n"
      "neg_inf -Inf\n"
      "neg_ts 1 -5\n"
      "colons:are:fine 3\n"
      "# just a comment\n"
      "#   TYPE spaced gauge\n");
  EXPECT_EQ(s.value("spaced", {{"a", "1"}, {"b", "2"}}), 2.5);
  EXPECT_TRUE(std::isnan(s.value("nan_value")));
  EXPECT_EQ(s.value("pos_inf"), INFINITY);
  EXPECT_EQ(s.value("neg_inf"), -INFINITY);
  EXPECT_EQ(s.value("neg_ts"), 1.0);
  EXPECT_EQ(s.value("colons:are:fine"), 3.0);
  EXPECT_EQ(s.type("spaced"), "gauge");
}

TEST(ScrapeTest, RejectsWhatTheFormatDoesNotAllow) {
  for (const char* bad : {
           "x{a=\"1\"} 1\nx{a=\"1\"} 2\n",  // the same series twice
           "x{a=\"1\",a=\"2\"} 1\n",        // the same label twice
           "x{a=1} 1\n",                    // an unquoted value
           "x{a=\"1\" 1\n",                 // no closing brace
           "x{a=\"1} 1\n",                  // no closing quote
           "x{a=\"\\t\"} 1\n",              // an escape the format does not have
           "x{1a=\"1\"} 1\n",               // a label name starting with a digit
           "x{a:b=\"1\"} 1\n",              // ':' is for metric names only
           "x abc\n",                       // not a number
           "x\n",                           // no value
           "x 1 2.5\n",                     // a timestamp is an integer
           "x 1 2 3\n",                     // trailing text
           "1x 1\n",                        // a name starting with a digit
           "{a=\"1\"} 1\n",                 // no name
           "# TYPE x counter\n# TYPE x gauge\n",
           "# TYPE x countr\n",
       }) {
    EXPECT_THROW(Scrape{bad}, std::runtime_error) << bad;
  }
}

TEST(ScrapeTest, KeepsTheTextItWasParsedFrom) {
  const std::string text = "a 1\nb 2\n";
  EXPECT_EQ(Scrape(text).text(), text);
  EXPECT_TRUE(Scrape("").series().empty());
}

}  // namespace
}  // namespace sluice::testing
