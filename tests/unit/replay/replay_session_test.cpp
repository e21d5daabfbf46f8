// SPDX-License-Identifier: Apache-2.0
// Bytes to lines: any split, CRLF, blank and overlong lines, malformed lines with their
// numbers; and the two renderings of a report.
#include "gateway/replay/replay_session.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "gateway/config/config_loader.hpp"

namespace sluice::replay {
namespace {

config::Config session_config() {
  const auto loaded = config::parse_config_text(
      R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},)"
      R"("limits":{"standard":{"requests":2,"window_ms":60000}},)"
      R"("routes":[{"name":"api","prefix":"/api","backend":"b","limit":"standard"}]})");
  return loaded.config.value();
}

std::string session_line(int second, std::string_view user, std::string_view limit) {
  return R"({"ts":"2026-11-25T00:00:)" + std::string(second < 10 ? "0" : "") +
         std::to_string(second) + R"(.000Z","method":"GET","path":"/api","route":"api",)" +
         R"("user":")" + std::string(user) + R"(","limit":")" + std::string(limit) +
         R"(","host":null})";
}

std::string session_log() {
  std::string log;
  for (int i = 0; i < 12; ++i) {
    log += session_line(i, i % 3 == 0 ? "aaaaaaaaaaaa" : "bbbbbbbbbbbb",
                        i % 2 == 0 ? "allowed" : "limited") +
           "\n";
  }
  return log;
}

std::string report_json(ReplaySession& session) {
  session.finish();
  return to_json(session.report()).dump();
}

TEST(ReplaySessionTest, AnySplitOfTheBytesGivesTheSameReport) {
  const std::string log = session_log();
  ReplaySession whole(session_config(), {});
  whole.feed(log);
  const std::string expected = report_json(whole);
  for (std::size_t piece : {1U, 2U, 7U, 64U, 333U}) {
    ReplaySession split(session_config(), {});
    for (std::size_t at = 0; at < log.size(); at += piece) {
      split.feed(std::string_view(log).substr(at, piece));
    }
    EXPECT_EQ(report_json(split), expected) << "pieces of " << piece;
  }
  EXPECT_NE(expected.find(R"("replayed":12)"), std::string::npos) << expected;
}

TEST(ReplaySessionTest, ReadsCrlfAndAnUnterminatedLastLineAndSkipsBlankLines) {
  ReplaySession session(session_config(), {});
  session.feed(session_line(1, "aaaaaaaaaaaa", "allowed") + "\r\n\n  \n" +
               session_line(2, "aaaaaaaaaaaa", "allowed"));
  session.finish();
  const ReplayReport report = session.report();
  EXPECT_EQ(report.lines, 2U);
  EXPECT_EQ(report.replayed, 2U);
  EXPECT_EQ(report.malformed, 0U);
  EXPECT_EQ(report.slow_parsed, 0U);
}

TEST(ReplaySessionTest, CountsMalformedLinesAndKeepsTheFirstWithTheirNumbers) {
  ReplaySession session(session_config(), {});
  std::string log = session_line(1, "aaaaaaaaaaaa", "allowed") + "\n";  // line 1
  log += "garbage\n";                                                   // 2
  log += "\n";                                                          // 3: blank
  log += R"({"ts":"yesterday","route":"api","user":"aaaaaaaaaaaa","limit":"allowed"})"
         "\n";                                               // 4
  log += session_line(2, "aaaaaaaaaaaa", "maybe") + "\n";    // 5
  log += session_line(3, "Not-A-Label!", "allowed") + "\n";  // 6
  log += R"({"route":"api"})"
         "\n";                                               // 7
  log += "[]\n";                                             // 8
  log += session_line(4, "aaaaaaaaaaaa", "allowed") + "\n";  // 9
  session.feed(log);
  session.finish();
  const ReplayReport report = session.report();
  EXPECT_EQ(report.lines, 8U);
  EXPECT_EQ(report.replayed, 2U);
  EXPECT_EQ(report.malformed, 6U);
  ASSERT_EQ(session.bad_lines().size(), ReplaySession::kKeptBadLines);
  EXPECT_EQ(session.bad_lines()[0].number, 2U);
  EXPECT_EQ(session.bad_lines()[0].reason, "not valid JSON");
  EXPECT_EQ(session.bad_lines()[1].number, 4U);
  EXPECT_EQ(session.bad_lines()[2].number, 5U);
  EXPECT_EQ(session.bad_lines()[3].number, 6U);
  EXPECT_EQ(session.bad_lines()[4].number, 7U);
  EXPECT_EQ(session.bad_lines()[4].reason, "no \"ts\" field");
}

TEST(ReplaySessionTest, AnOverlongLineIsMalformedAndTheNextOneIsRead) {
  ReplaySession session(session_config(), {});
  const std::string huge(ReplaySession::kMaxLineBytes + 10, 'x');
  session.feed(huge.substr(0, 1000));
  session.feed(huge.substr(1000));
  session.feed("\n" + session_line(1, "aaaaaaaaaaaa", "allowed") + "\n");
  session.finish();
  const ReplayReport report = session.report();
  EXPECT_EQ(report.malformed, 1U);
  EXPECT_EQ(report.replayed, 1U);
  ASSERT_EQ(session.bad_lines().size(), 1U);
  EXPECT_EQ(session.bad_lines()[0].number, 1U);
  EXPECT_EQ(session.bad_lines()[0].reason, "longer than 1 MiB");
}

TEST(ReplayReportTest, WritesAnAlignedTable) {
  ReplayReport report;
  report.lines = 12;
  report.replayed = 10;
  report.malformed = 1;
  report.unrouted_then = 1;
  report.reorder_window_ms = 2000;
  report.first_ts = "2026-11-25T00:00:00.000Z";
  report.last_ts = "2026-11-25T00:01:00.000Z";
  report.policies = {PolicyTotals{.policy = "standard",
                                  .requests = 10,
                                  .allowed_then = 8,
                                  .limited_then = 2,
                                  .allowed_now = 5,
                                  .limited_now = 5}};
  report.top_users = {UserChange{.user = "aaaaaaaaaaaa",
                                 .policy = "standard",
                                 .requests = 10,
                                 .limited_then = 2,
                                 .limited_now = 5}};
  std::ostringstream out;
  write_text(report, out);
  EXPECT_EQ(out.str(),
            "replayed 10 requests logged from 2026-11-25T00:00:00.000Z to "
            "2026-11-25T00:01:00.000Z\n"
            "\n"
            "policy    requests  allowed then  limited then  allowed now  limited now  delta\n"
            "standard        10             8             2            5            5     +3\n"
            "\n"
            "most affected users (delta = limited now - limited then):\n"
            "user          policy    requests  limited then  limited now  delta\n"
            "aaaaaaaaaaaa  standard        10             2            5     +3\n"
            "\n"
            "lines: 12 read, 10 replayed, 1 malformed, 1 unrouted then, 0 unrouted now; 0 later "
            "than the 2000 ms reorder window\n");
  const auto json = to_json(report);
  EXPECT_EQ(json["policies"][0]["delta"], 3);
  EXPECT_EQ(json["top_users"][0]["user"], "aaaaaaaaaaaa");
  EXPECT_EQ(json["from"], "2026-11-25T00:00:00.000Z");
}

}  // namespace
}  // namespace sluice::replay
