// SPDX-License-Identifier: Apache-2.0
// The integration-test toolkit itself (tests/support): ChildProcess, RawPeer, SluiceProcess,
// so that a failing gateway test points at the gateway, not at its harness.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include "tests/support/child_process.hpp"
#include "tests/support/endpoint_text.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/wait.hpp"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::HttpClient;
using testing::OutputStream;
using testing::RawPeer;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kGet = "GET /x HTTP/1.1\r\nHost: peer\r\n\r\n";

TEST(ChildProcessTest, CapturesBothStreamsAndTheExitCode) {
  ChildProcess p({"/bin/sh", "-c", "echo out1; echo err1 >&2; printf 'tail'; exit 3"});
  std::string line;
  EXPECT_TRUE(p.wait_for_line(OutputStream::kStderr, "err", testing::kDefaultTimeout, &line));
  EXPECT_EQ(line, "err1");
  EXPECT_TRUE(p.wait_for_line("out1"));
  EXPECT_FALSE(p.wait_for_line(OutputStream::kStderr, "out1", milliseconds(200)));
  EXPECT_EQ(p.wait_exit(), 3);
  EXPECT_EQ(p.wait_exit(), 3);           // cached
  EXPECT_TRUE(p.wait_for_line("tail"));  // an unterminated last line counts at the end
  EXPECT_EQ(p.stdout_text(), "out1\ntail");
  EXPECT_EQ(p.stderr_text(), "err1\n");
  EXPECT_EQ(p.output().size(), p.stdout_text().size() + p.stderr_text().size());
  EXPECT_EQ(p.line_count(), 3U);
  EXPECT_EQ(p.count_lines("1"), 2U);
  EXPECT_FALSE(p.running());
  EXPECT_FALSE(p.send_signal(SIGTERM));  // reaped: never signal a recycled pid
}

TEST(ChildProcessTest, PassesExtraEnvironmentVariables) {
  ChildProcess p({"/bin/sh", "-c", "echo \"$SLUICE_TEST_A-$HOME\""},
                 {{"SLUICE_TEST_A", "alpha"}, {"HOME", "/override"}});
  EXPECT_EQ(p.wait_exit(), 0);
  EXPECT_EQ(p.stdout_text(), "alpha-/override\n");
}

TEST(ChildProcessTest, WaitsAreBounded) {
  ChildProcess p({"/bin/sleep", "30"});
  auto started = Clock::now();
  EXPECT_FALSE(p.wait_for_line("never", milliseconds(150)));
  EXPECT_FALSE(p.wait_exit(milliseconds(150)).has_value());
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
  EXPECT_TRUE(p.running());
  ASSERT_TRUE(p.send_signal(SIGTERM));
  EXPECT_EQ(p.wait_exit(), 128 + SIGTERM);
  started = Clock::now();
  EXPECT_FALSE(p.wait_for_line("never"));  // streams ended: no waiting for the timeout
  EXPECT_LT(Clock::now() - started, milliseconds(1000));
}

TEST(ChildProcessTest, WaitsForLinesAfterAGivenIndex) {
  ChildProcess p({"/bin/sh", "-c", "echo tick; sleep 0.2; echo tick"});
  ASSERT_TRUE(p.wait_for_line("tick"));
  EXPECT_TRUE(p.wait_for_line_after(1, "tick"));
  EXPECT_EQ(p.count_lines("tick"), 2U);
}

TEST(ChildProcessTest, DestructorKillsARunningChild) {
  pid_t pid = 0;
  {
    ChildProcess p({"/bin/sleep", "30"});
    pid = p.pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped
}

TEST(ChildProcessTest, ThrowsForAMissingProgram) {
  EXPECT_THROW(ChildProcess({"/nonexistent/program"}), std::runtime_error);
  EXPECT_THROW((void)testing::run_process({"/nonexistent/program"}), std::runtime_error);
}

TEST(RunProcessTest, ReturnsTheExitCodeAndBothStreams) {
  const auto r = testing::run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(testing::run_process({"/bin/sh", "-c", "kill -TERM $$"}).exit_code, 128 + SIGTERM);
}

TEST(RunProcessTest, ACommandThatDoesNotExitInTimeIsAnError) {
  const auto started = Clock::now();
  EXPECT_THROW((void)testing::run_process({"/bin/sleep", "30"}, milliseconds(200)),
               std::runtime_error);
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
}

TEST(WaitUntilTest, ReturnsAsSoonAsTheConditionHolds) {
  int polls = 0;
  EXPECT_TRUE(testing::wait_until("the third poll", [&] { return ++polls == 3; }));
  EXPECT_EQ(polls, 3);
}

TEST(WaitUntilTest, FailsAfterTheTimeoutNamingWhatItWaitedFor) {
  const auto started = Clock::now();
  const auto result = testing::wait_until(
      "pigs to fly", [] { return false; }, milliseconds(100));
  EXPECT_FALSE(result);
  EXPECT_GE(Clock::now() - started, milliseconds(100));
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
  EXPECT_STREQ(result.message(), "timed out after 100 ms waiting for: pigs to fly");
}

TEST(RawPeerTest, NeverAnswerKeepsTheConnectionOpen) {
  RawPeer peer(RawPeer::Mode::kNeverAnswer);
  HttpClient client(peer.port());
  client.send_raw(kGet);
  EXPECT_TRUE(peer.wait_for_requests(1));
  EXPECT_FALSE(client.closed_by_peer(milliseconds(200)));
  EXPECT_FALSE(client.read_response(milliseconds(100)).has_value());
  EXPECT_EQ(peer.accepted(), 1U);
}

TEST(RawPeerTest, CloseAndResetAfterRequest) {
  for (const auto mode : {RawPeer::Mode::kCloseAfterRequest, RawPeer::Mode::kResetAfterRequest}) {
    RawPeer peer(mode);
    HttpClient client(peer.port());
    client.send_raw(kGet);
    EXPECT_TRUE(client.closed_by_peer());
    EXPECT_EQ(client.read_raw_until_close(), "");
    EXPECT_EQ(peer.requests(), 1U);
  }
}

TEST(RawPeerTest, PartialBodyThenResetOrClose) {
  for (const auto mode :
       {RawPeer::Mode::kPartialBodyThenReset, RawPeer::Mode::kPartialBodyThenClose}) {
    RawPeer peer(mode);
    HttpClient raw(peer.port());
    raw.send_raw(kGet);
    const std::string bytes = raw.read_raw_until_close();
    EXPECT_EQ(bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << bytes.substr(0, 100);
    EXPECT_NE(bytes.find("Content-Length: 1000000\r\n"), std::string::npos);
    EXPECT_EQ(bytes.size() - (bytes.find("\r\n\r\n") + 4), 1000U);
    HttpClient parsed(peer.port());
    parsed.send_raw(kGet);
    EXPECT_FALSE(parsed.read_response().has_value());  // the body never completes
    EXPECT_EQ(peer.accepted(), 2U);
  }
}

TEST(RawPeerTest, RespondsOkThenClosesWhenIdle) {
  RawPeer peer(RawPeer::Mode::kRespondOkThenCloseIdle, milliseconds(150));
  HttpClient client(peer.port());
  for (int i = 0; i < 2; ++i) {
    const auto res = client.get("/pooled");
    EXPECT_EQ(res.result_int(), 200U);
    EXPECT_EQ(res.body(), "ok\n");
    EXPECT_TRUE(res.keep_alive());
  }
  const auto idle_from = Clock::now();
  EXPECT_EQ(peer.idle_closes(), 0U);
  EXPECT_TRUE(peer.wait_for_idle_closes(1));
  EXPECT_TRUE(client.closed_by_peer());
  EXPECT_GE(Clock::now() - idle_from, milliseconds(100));
  EXPECT_EQ(peer.accepted(), 1U);
  EXPECT_EQ(peer.requests(), 2U);
  // A connection the client closes first is not an idle close.
  HttpClient leaving(peer.port());
  EXPECT_EQ(leaving.get("/once").result_int(), 200U);
  leaving.close();
  HttpClient staying(peer.port());
  EXPECT_EQ(staying.get("/once").result_int(), 200U);
  EXPECT_TRUE(peer.wait_for_idle_closes(2));
  EXPECT_TRUE(staying.closed_by_peer());
  EXPECT_EQ(peer.idle_closes(), 2U) << "the connection closed by the client was counted";
}

TEST(RawPeerTest, RefusedPortsRefuse) {
  const RawPeer peer(RawPeer::Mode::kRefuse);
  EXPECT_EQ(HttpClient::probe_connect(peer.port()), boost::asio::error::connection_refused);
  EXPECT_THROW(HttpClient{peer.port()}, std::runtime_error);
  EXPECT_EQ(HttpClient::probe_connect(RawPeer::refused_port()),
            boost::asio::error::connection_refused);
  EXPECT_EQ(peer.accepted(), 0U);
}

TEST(SluiceProcessTest, MinimalGatewayConfigIsValid) {
  testing::SluiceProcess::Options options;
  options.extra_args = {"--check"};
  options.wait_ready = false;
  testing::SluiceProcess sluice(testing::minimal_gateway_config({"127.0.0.1:9001"}), options);
  EXPECT_EQ(sluice.process().wait_exit(), 0) << sluice.process().output();
  EXPECT_EQ(sluice.process().stdout_text(), "config ok\n");
  auto changed = testing::minimal_gateway_config({"127.0.0.1:9002"});
  sluice.rewrite_config(changed);
  std::ifstream in(sluice.config_path());
  EXPECT_EQ(nlohmann::json::parse(in), changed);
}

TEST(SluiceProcessTest, ThrowsWithTheOutputWhenTheGatewayDoesNotStart) {
  auto config = testing::minimal_gateway_config({"127.0.0.1:9001"});
  config["listen"]["prot"] = 1;
  try {
    testing::SluiceProcess sluice(config);
    ADD_FAILURE() << "started with a bad config";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("listen.prot: unknown field"), std::string::npos)
        << e.what();
  }
}

TEST(SluiceProcessTest, ParsesTheReadyLine) {
  const std::string line =
      "[2024-05-01 10:00:00.000] [app] [info] ready proxy=127.0.0.1:8080 admin=[::1]:9901 "
      "threads=4";
  EXPECT_EQ(testing::parse_port(testing::field_value(line, "proxy")), 8080);
  EXPECT_EQ(testing::parse_port(testing::field_value(line, "admin")), 9901);
  EXPECT_EQ(testing::field_value(line, "threads"), "4");
  EXPECT_EQ(testing::field_value(line, "missing"), "");
  EXPECT_FALSE(testing::parse_port("127.0.0.1:0").has_value());
  EXPECT_FALSE(testing::parse_port("localhost").has_value());
}

}  // namespace
}  // namespace sluice
