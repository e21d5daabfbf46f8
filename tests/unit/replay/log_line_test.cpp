// SPDX-License-Identifier: Apache-2.0
// The fast scanner against nlohmann::json on the gateway's own lines (log::AccessLog::format),
// on variations of them, and on every truncation and single-byte deletion of one.
#include "gateway/replay/log_line.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/log/access_log.hpp"

namespace sluice::replay {
namespace {

log::AccessRecord logged_record() {
  log::AccessRecord r;
  r.ts = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'037'873'952));
  r.request_id = "7f0c";
  r.method = "GET";
  r.path = "/api/login";
  r.route = "login";
  r.backend = "auth";
  r.endpoint = "10.0.0.7:8080";
  r.user = "a0263a3365c5";
  r.status = 200;
  r.duration_ms = 0.636;
  r.upstream_ms = 0.409;
  r.attempts = 1;
  r.limit = "allowed";
  r.breaker = "pass";
  r.client_ip = "203.0.113.9";
  r.host = "api.example.com";
  r.protocol = "HTTP/1.1";
  return r;
}

/// What the fallback reads from `line` (nullopt when it refuses it).
std::optional<LogLine> slow(const std::string& line, nlohmann::json& doc) {
  LogLine out;
  if (!parse_log_line_json(line, doc, out).empty()) {
    return std::nullopt;
  }
  return out;
}

/// The contract: whatever the scanner accepts, nlohmann::json reads the same way.
void expect_agreement(const std::string& line) {
  LogLine fast;
  if (!scan_log_line(line, fast)) {
    return;
  }
  nlohmann::json doc;
  const auto reference = slow(line, doc);
  ASSERT_TRUE(reference.has_value()) << "scanner accepted what nlohmann refuses: " << line;
  EXPECT_EQ(fast, *reference) << line;
}

TEST(LogLineTest, ScansTheGatewaysOwnLine) {
  const std::string line = log::AccessLog::format(logged_record());
  LogLine out;
  ASSERT_TRUE(scan_log_line(line, out)) << line;
  EXPECT_EQ(out.ts, "2025-11-25T02:31:13.952Z");
  EXPECT_EQ(out.route, "login");
  EXPECT_EQ(out.user, "a0263a3365c5");
  EXPECT_EQ(out.limit, "allowed");
  EXPECT_EQ(out.method, "GET");
  EXPECT_EQ(out.path, "/api/login");
  EXPECT_EQ(out.host, "api.example.com");
  expect_agreement(line);
}

TEST(LogLineTest, ScansNullUserAndHost) {
  log::AccessRecord r = logged_record();
  r.user.reset();
  r.host = "";
  r.route = "none";
  r.limit = "none";
  const std::string line = log::AccessLog::format(r);
  LogLine out;
  ASSERT_TRUE(scan_log_line(line, out)) << line;
  EXPECT_FALSE(out.user.has_value());
  EXPECT_FALSE(out.host.has_value());
  expect_agreement(line);
}

TEST(LogLineTest, EscapesOutsideTheNeededFieldsStayOnTheFastPath) {
  log::AccessRecord r = logged_record();
  r.request_id = "a\"b\\c\x01\xff";  // escaped by the writer
  r.endpoint = "\t";
  const std::string line = log::AccessLog::format(r);
  LogLine out;
  EXPECT_TRUE(scan_log_line(line, out)) << line;
  expect_agreement(line);
}

TEST(LogLineTest, LeavesEscapedOrNonAsciiNeededFieldsToTheFallback) {
  log::AccessRecord r = logged_record();
  r.path = "/caf\xc3\xa9/\x80\"q";  // UTF-8 kept, a stray byte escaped, a quote escaped
  const std::string line = log::AccessLog::format(r);
  LogLine fast;
  EXPECT_FALSE(scan_log_line(line, fast));
  nlohmann::json doc;
  const auto out = slow(line, doc);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->path, "/caf\xc3\xa9/\xc2\x80\"q");  // JSON's \u0080 is U+0080
  EXPECT_EQ(out->route, "login");
}

TEST(LogLineTest, FallbackDecidesWhatTheScannerRefuses) {
  const std::string base =
      R"("ts":"2026-11-25T02:31:13.952Z","route":"r","user":"a0263a3365c5","limit":"limited",)"
      R"("method":"GET","path":"/p","host":null)";
  const std::vector<std::string> refused_but_valid = {
      "{" + base + R"(,"route":"again"})",         // a repeated field: the last one counts
      "{" + base + R"(,"extra":{"nested":[1]}})",  // nesting
      "{" + base + R"(,"n":1.5e3})",               // an exponent
      "{" + base + R"(,"r\u006fute2":1})",         // an escaped key
      "{" + base + R"(,"s":"\ud83d\ude00"})",      // a surrogate pair
  };
  for (const std::string& line : refused_but_valid) {
    LogLine fast;
    EXPECT_FALSE(scan_log_line(line, fast)) << line;
    nlohmann::json doc;
    EXPECT_TRUE(slow(line, doc).has_value()) << line;
  }
  nlohmann::json doc;
  EXPECT_EQ(slow(refused_but_valid[0], doc)->route, "again");
}

TEST(LogLineTest, RefusesWhatIsNotALogLine) {
  const std::vector<std::string> bad = {
      "",
      "garbage",
      "[1,2]",
      R"({"ts":"2026-11-25T02:31:13.952Z"})",  // fields missing
      R"({"ts":1,"route":"r","user":null,"limit":"none"})",
      R"({"ts":"t","route":"r","user":null,"limit":"none","n":1e400})",
  };
  for (const std::string& line : bad) {
    LogLine fast;
    EXPECT_FALSE(scan_log_line(line, fast)) << line;
    nlohmann::json doc;
    LogLine out;
    EXPECT_FALSE(parse_log_line_json(line, doc, out).empty()) << line;
  }
}

TEST(LogLineTest, AgreesWithNlohmannOnEveryTruncationAndDeletion) {
  log::AccessRecord r = logged_record();
  r.request_id = "q\"\\\x01";
  const std::string line = log::AccessLog::format(r);
  for (std::size_t i = 0; i <= line.size(); ++i) {
    SCOPED_TRACE(i);
    expect_agreement(line.substr(0, i));
    if (i < line.size()) {
      std::string deleted = line;
      deleted.erase(i, 1);
      expect_agreement(deleted);
      std::string doubled = line;
      doubled.insert(i, 1, line[i]);
      expect_agreement(doubled);
    }
  }
}

TEST(LogLineTest, AgreesWithNlohmannOnWhitespaceAndOrder) {
  const std::vector<std::string> lines = {
      R"( { "limit" : "none" , "user" : null , "route" : "r" , "ts" : "x" ,)"
      R"( "path" : "/" , "method" : "-" , "host" : "h" , "z" : -0.25 , "t" : true } )",
      R"({"ts":"x","route":"r","user":"u","limit":"l","method":"m","path":"p","host":"h"})"
      "\r",
      R"({"ts":"x","route":"r","user":"u","limit":"l","method":"m","path":"p","host":"h",})",
      R"({"ts":"x","route":"r","user":"u","limit":"l","method":"m","path":"p","host":"h"}})",
      R"({"ts":"x","route":"r","user":"u","limit":"l","method":"m","path":"p","host":"h","n":01})",
      R"({"ts":"x","route":"r","user":"u","limit":"l","method":"m","path":"p","host":"h","n":-})",
  };
  for (const std::string& line : lines) {
    expect_agreement(line);
  }
  LogLine out;
  EXPECT_TRUE(scan_log_line(lines[0], out));
  EXPECT_TRUE(scan_log_line(lines[1], out));
  EXPECT_FALSE(scan_log_line(lines[2], out));  // a trailing comma
  EXPECT_FALSE(scan_log_line(lines[4], out));  // a leading zero
}

TEST(LogTimeTest, ParsesAndFormatsTheLogsForm) {
  const auto t = parse_log_time("2026-11-25T02:31:13.952Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(format_log_time(*t), "2026-11-25T02:31:13.952Z");
  const auto epoch = parse_log_time("1970-01-01T00:00:00.001Z");
  ASSERT_TRUE(epoch.has_value());
  EXPECT_EQ(epoch->time_since_epoch().count(), 1);
  EXPECT_EQ(*parse_log_time("2024-02-29T23:59:59.999Z") + std::chrono::milliseconds(1),
            *parse_log_time("2024-03-01T00:00:00.000Z"));
}

TEST(LogTimeTest, RefusesOtherFormsAndImpossibleTimes) {
  for (const char* text :
       {"2026-11-25T02:31:13Z", "2026-11-25 02:31:13.952Z", "2026-02-30T00:00:00.000Z",
        "2026-11-25T24:00:00.000Z", "2026-11-25T02:60:00.000Z", "2026-13-01T00:00:00.000Z",
        "2026-11-25T02:31:13.952+", "20x6-11-25T02:31:13.952Z"}) {
    EXPECT_FALSE(parse_log_time(text).has_value()) << text;
  }
}

TEST(UserLabelTest, RoundTripsTwelveLowerCaseHexDigits) {
  const auto value = parse_user_label("a0263a3365c5");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, 0xa0263a3365c5U);
  const auto text = user_label_text(*value);
  EXPECT_EQ(std::string(text.data(), text.size()), "a0263a3365c5");
  EXPECT_FALSE(parse_user_label("A0263A3365C5").has_value());
  EXPECT_FALSE(parse_user_label("a0263a3365c").has_value());
  EXPECT_FALSE(parse_user_label("a0263a3365cg").has_value());
}

}  // namespace
}  // namespace sluice::replay
