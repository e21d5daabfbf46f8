// SPDX-License-Identifier: Apache-2.0
// `sluice replay` on the real binary (docs/operating.md "What-if replay"): a constructed log
// whose answer is known, a log the real gateway wrote (with an override matched through the
// user hash key), and the errors.
#include <gtest/gtest.h>

#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include "gateway/core/keyed_hash.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/demo_backend.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

constexpr const char* kReplayBinary = SLUICE_BINARY;
constexpr const char* kHashVariable = "SLUICE_REPLAY_TEST_HASH_KEY";
constexpr const char* kHashSecret = "replay-integration-secret-0123456789";

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// The access log label of `key` under kHashSecret (docs/access-log.md: the low 48 bits of the
/// keyed hash, as 12 hex digits).
std::string label_of(std::string_view key) {
  const std::uint64_t h = core::KeyedHash::from_secret(kHashSecret)(key);
  std::ostringstream text;
  text << std::hex << std::setw(12) << std::setfill('0') << (h & 0xffffffffffffULL);
  return text.str();
}

/// The policy row `name` of a JSON report.
json policy_row(const json& report, const std::string& name) {
  for (const json& row : report.at("policies")) {
    if (row.at("policy") == name) {
      return row;
    }
  }
  return nullptr;
}

/// An access log line in the gateway's format, at second `s` of 2026-11-25T00:00.
std::string constructed_line(int s, const std::string& user, const std::string& limit) {
  const std::string ts =
      "2026-11-25T00:00:" + std::string(s < 10 ? "0" : "") + std::to_string(s) + ".000Z";
  return json({{"ts", ts},
               {"request_id", "r"},
               {"method", "GET"},
               {"path", "/api/x"},
               {"route", "api"},
               {"backend", "b"},
               {"endpoint", "-"},
               {"user", user},
               {"status", limit == "limited" ? 429 : 200},
               {"limit", limit},
               {"breaker", "pass"},
               {"host", nullptr}})
             .dump() +
         "\n";
}

class ReplayCommandTest : public ::testing::Test {
 protected:
  TempDir dir{"sluice-replay"};
  std::string new_config = (dir / "new.json").string();
  std::string log = (dir / "access.log").string();
};

TEST_F(ReplayCommandTest, AHalvedLimitOnAConstructedLogGivesTheKnownAnswer) {
  write_text_file(new_config, R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},
    "limits":{"standard":{"requests":5,"window_ms":60000}},
    "routes":[{"name":"api","prefix":"/api","backend":"b","limit":"standard"}]})");
  // Logged under 10 a minute: A sent 20 (10 limited), B sent 3; then a broken line and an
  // unrouted request.
  std::string text;
  for (int i = 0; i < 20; ++i) {
    text += constructed_line(i, "aaaaaaaaaaaa", i < 10 ? "allowed" : "limited");
  }
  for (int i = 0; i < 3; ++i) {
    text += constructed_line(30 + i, "bbbbbbbbbbbb", "allowed");
  }
  text += "{\"ts\":\n";
  text += R"({"ts":"2026-11-25T00:00:40.000Z","route":"none","user":null,"limit":"none"})"
          "\n";
  write_text_file(log, text);

  const auto r =
      run_process({kReplayBinary, "replay", "--config", new_config, "--format", "json", log});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  const json standard = policy_row(report, "standard");
  EXPECT_EQ(standard.at("requests"), 23);
  EXPECT_EQ(standard.at("allowed_then"), 13);
  EXPECT_EQ(standard.at("limited_then"), 10);
  EXPECT_EQ(standard.at("allowed_now"), 8);
  EXPECT_EQ(standard.at("limited_now"), 15);
  EXPECT_EQ(standard.at("delta"), 5);
  EXPECT_EQ(report.at("lines"), 25);
  EXPECT_EQ(report.at("malformed"), 1);
  EXPECT_EQ(report.at("unrouted_then"), 1);
  ASSERT_EQ(report.at("top_users").size(), 1U);  // B's count did not change
  EXPECT_EQ(report.at("top_users")[0].at("user"), "aaaaaaaaaaaa");
  EXPECT_EQ(report.at("top_users")[0].at("limited_now"), 15);
  EXPECT_NE(r.err.find("sluice replay: malformed line 24: not valid JSON"), std::string::npos)
      << r.err;

  const auto t = run_process({kReplayBinary, "replay", "--config", new_config, log});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("policy    requests  allowed then  limited then  allowed now  limited now"
                       "  delta\nstandard        23            13            10            8"
                       "           15     +5\n"),
            std::string::npos)
      << t.out;
}

TEST_F(ReplayCommandTest, ReplaysWhatTheRealGatewayLogged) {
  DemoBackend backend;
  json config = minimal_gateway_config({backend.endpoint()});
  config["access_log"] = {{"path", log}, {"user_hash_key_env", kHashVariable}};
  config["identity"] = json::array({{{"header", "X-API-Key"}}});
  config["limits"] = {{"standard", {{"requests", 10}, {"window_ms", 60000}}}};
  config["routes"][0]["limit"] = "standard";
  SluiceProcess::Options options;
  options.env = {{kHashVariable, kHashSecret}};
  {
    SluiceProcess gateway(config, options);
    HttpClient client(gateway.proxy_port());
    for (int i = 0; i < 15; ++i) {  // 10 allowed, 5 limited
      EXPECT_EQ(client.get("/ok", {{"X-API-Key", "alice"}}).result_int(), i < 10 ? 200U : 429U);
    }
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(client.get("/ok", {{"X-API-Key", "vip"}}).result_int(), 200U);
    }
    ASSERT_EQ(gateway.terminate(), 0);  // the drain writes every line out
  }
  // NEW: half the limit, but 20 for the key "vip".
  json next = config;
  next["limits"]["standard"]["requests"] = 5;
  next["overrides"] = {{"standard", {{"vip", {{"requests", 20}}}}}};
  write_text_file(new_config, next.dump());

  const auto r = run_process(
      {kReplayBinary, "replay", "--config", new_config, "--format", "json", "--top", "5", log},
      std::chrono::seconds(30), {{kHashVariable, kHashSecret}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  const json standard = policy_row(report, "standard");
  EXPECT_EQ(standard.at("requests"), 23);
  EXPECT_EQ(standard.at("allowed_then"), 18);
  EXPECT_EQ(standard.at("limited_then"), 5);
  EXPECT_EQ(standard.at("allowed_now"), 13);  // alice 5, vip 8 (its override)
  EXPECT_EQ(standard.at("limited_now"), 10);
  EXPECT_EQ(report.at("malformed"), 0);
  EXPECT_EQ(report.at("slow_parsed"), 0);  // the gateway's lines take the fast path
  ASSERT_EQ(report.at("top_users").size(), 1U);
  EXPECT_EQ(report.at("top_users")[0].at("user"), label_of("alice"));
  EXPECT_EQ(report.at("top_users")[0].at("delta"), 5);
  EXPECT_EQ(report.at("overrides")[0].at("matched"), true);
  EXPECT_EQ(report.at("overrides")[0].at("seen"), 1);

  // Without the key the override cannot be matched: vip gets the policy's 5, and it says so.
  const auto blind =
      run_process({kReplayBinary, "replay", "--config", new_config, "--format", "json", log},
                  std::chrono::seconds(30), {{kHashVariable, ""}});
  ASSERT_EQ(blind.exit_code, 0) << blind.err;
  EXPECT_EQ(policy_row(json::parse(blind.out), "standard").at("limited_now"), 13);
  EXPECT_NE(blind.err.find("cannot be matched"), std::string::npos) << blind.err;
}

TEST_F(ReplayCommandTest, AnInvalidConfigOrAMissingLogExitsOne) {
  write_text_file(new_config, R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},
    "routes":[{"name":"r","prefix":"/","backend":"nope"}]})");
  write_text_file(log, "");
  const auto bad = run_process({kReplayBinary, "replay", "--config", new_config, log});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("routes[0].backend: no such backend\n"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");

  write_text_file(new_config, R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},
    "routes":[{"name":"r","prefix":"/","backend":"b"}]})");
  const std::string missing = (dir / "missing.log").string();
  const auto gone = run_process({kReplayBinary, "replay", "--config", new_config, missing});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_EQ(gone.err, "sluice replay: cannot read " + missing + ": No such file or directory\n");

  const auto usage = run_process({kReplayBinary, "replay", log});
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_EQ(usage.err.rfind("sluice: replay: --config NEW.json is required\nusage:", 0), 0U)
      << usage.err;
}

TEST_F(ReplayCommandTest, ReadsStdin) {
  write_text_file(new_config, R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},
    "routes":[{"name":"r","prefix":"/","backend":"b"}]})");
  const auto r = run_process({kReplayBinary, "replay", "--config", new_config, "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;  // the test's stdin is /dev/null: nothing to replay
  EXPECT_EQ(r.out.rfind("no request to replay\n", 0), 0U) << r.out;
}

}  // namespace
}  // namespace sluice::testing
