// SPDX-License-Identifier: Apache-2.0
// The demo backend's fault settings through the real binary (gateway/demo): /healthz, /control
// and their command-line options, threads, signals and usage errors. Routes, streaming and
// WebSocket: demo_backend_test.cpp.
#include "tests/integration/demo_backend_fixture.hpp"

namespace sluice {
namespace {

using namespace demo_backend_support;  // NOLINT(google-build-using-namespace)

TEST_F(DemoBackendTest, HealthzFollowsTheHealthSetByControl) {
  const auto up = client_.get("/healthz");
  EXPECT_EQ(up.result_int(), 200U);
  EXPECT_EQ(up.body(), R"({"status":"up"})");
  EXPECT_EQ(up[http::field::content_type], "application/json");
  const auto state = client_.get("/control");
  EXPECT_EQ(state.result_int(), 200U);
  EXPECT_EQ(state.body(), R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0,)"
                          R"("capacity":0,"service_ms":0,"in_service":0,"queued":0})");

  EXPECT_EQ(control("health=down")["health"], "down");
  const auto down = client_.get("/healthz");
  EXPECT_EQ(down.result_int(), 503U);
  EXPECT_EQ(down.body(), R"({"status":"down"})");
  EXPECT_TRUE(down.keep_alive());
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);  // health is /healthz's alone
  EXPECT_EQ(nlohmann::json::parse(client_.get("/control").body())["health"], "down");

  EXPECT_EQ(control("health=up").dump(),
            R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0,)"
            R"("capacity":0,"service_ms":0,"in_service":0,"queued":0})");
  EXPECT_EQ(client_.get("/healthz").result_int(), 200U);
}

TEST_F(DemoBackendTest, FailPercentFailsExactlyThatShareSpreadEvenly) {
  EXPECT_EQ(control("fail_percent=10")["fail_percent"], 10);
  std::vector<int> failed;
  for (int i = 0; i < 100; ++i) {
    const auto res = client_.get("/ok");
    if (res.result_int() == 503) {
      EXPECT_EQ(res.body(), R"({"error":"injected_failure"})");
      EXPECT_TRUE(res.keep_alive());
      failed.push_back(i);
    } else {
      EXPECT_EQ(res.result_int(), 200U) << i;
    }
    // Neither /healthz nor /control counts or fails.
    EXPECT_EQ(client_.get("/healthz").result_int(), 200U);
    EXPECT_EQ(client_.get("/control").result_int(), 200U);
  }
  EXPECT_EQ(failed, (std::vector<int>{9, 19, 29, 39, 49, 59, 69, 79, 89, 99}));
  control("fail_percent=100");
  EXPECT_EQ(client_.get("/nope").result_int(), 503U);  // every other route, unknown ones too
  EXPECT_EQ(client_.request(http::verb::post, "/echo", {}, "abc").result_int(), 503U);
  EXPECT_EQ(client_.get("/ok").result_int(), 503U);  // the body was read, not taken as a request
  control("fail_percent=0");
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
}

TEST(DemoBackendProcessTest, FailPercentCountsAcrossThreadsAndConnections) {
  DemoBackend backend(2);
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<HttpClient>(backend.port()));
  }
  ASSERT_EQ(clients[0]->request(http::verb::post, "/control?fail_percent=25").result_int(), 200U);
  int failures = 0;
  for (int i = 0; i < 100; ++i) {
    failures += clients[i % clients.size()]->get("/ok").result_int() == 503 ? 1 : 0;
  }
  EXPECT_EQ(failures, 25);
}

TEST_F(DemoBackendTest, ResetFailuresCloseWithAnRstAndNoBytes) {
  control("fail_percent=100&fail_status=reset");
  const auto get = raw_exchange(backend_.port(), "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(get.end, net::error::connection_reset) << get.end.message();
  EXPECT_EQ(get.bytes, "");
  const auto post = raw_exchange(
      backend_.port(), "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(post.end, net::error::connection_reset) << post.end.message();
  EXPECT_EQ(post.bytes, "");
  // /healthz and /control still answer, so the instance can be healed.
  const auto health = raw_exchange(backend_.port(),
                                   "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.end, net::error::eof) << health.end.message();
  EXPECT_EQ(health.bytes.rfind("HTTP/1.1 200 ", 0), 0U) << health.bytes;
  EXPECT_EQ(control("fail_percent=0")["fail_status"], "reset");
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
}

TEST_F(DemoBackendTest, DelayHoldsUpEveryAnswerButControlsWithoutBlocking) {
  constexpr std::chrono::milliseconds kDelay{1000};
  EXPECT_EQ(control("delay_ms=1000")["delay_ms"], 1000);
  const auto res = get_while_waiting("/ok", "/control", kDelay);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "ok\n");
  // /healthz is delayed too, so a health check with a shorter timeout fails.
  const auto health = get_while_waiting("/healthz", "/control", kDelay);
  ASSERT_TRUE(health);
  EXPECT_EQ(health->result_int(), 200U);
  control("delay_ms=0");
  const auto started = Clock::now();
  EXPECT_EQ(client_.get("/ok").result_int(), 200U);
  EXPECT_LT(Clock::now() - started, kDelay);
}

TEST_F(DemoBackendTest, BadControlRequestsAre400AndChangeNothing) {
  const std::string initial = client_.get("/control").body();
  for (const auto& [query, parameter] :
       std::vector<std::pair<std::string, std::string>>{{"health=sideways", "health"},
                                                        {"fail_percent=101", "fail_percent"},
                                                        {"fail_percent=ten", "fail_percent"},
                                                        {"fail_status=500", "fail_status"},
                                                        {"delay_ms=600001", "delay_ms"},
                                                        {"capacity=100001", "capacity"},
                                                        {"service_ms=600001", "service_ms"},
                                                        {"fail_percent=50&delay_ms=-5", "delay_ms"},
                                                        {"colour=red", "colour"}}) {
    const auto res = client_.request(http::verb::post, "/control?" + query);
    EXPECT_EQ(res.result_int(), 400U) << query;
    EXPECT_EQ(res[http::field::content_type], "application/json");
    const auto json = nlohmann::json::parse(res.body());
    EXPECT_EQ(json["parameter"], parameter) << query;
    EXPECT_EQ(json["error"], parameter == "colour" ? "unknown_parameter" : "bad_parameter");
    EXPECT_TRUE(res.keep_alive());
  }
  EXPECT_EQ(client_.get("/control").body(), initial);
  const auto get = client_.get("/control?health=down");
  EXPECT_EQ(get.result_int(), 400U);
  EXPECT_EQ(get.body(), R"({"error":"changes_need_post"})");
  const auto put = client_.request(http::verb::put, "/control?health=down");
  EXPECT_EQ(put.result_int(), 405U);
  EXPECT_EQ(put[http::field::allow], "GET, HEAD, POST");
  EXPECT_EQ(client_.get("/control").body(), initial);
}

TEST(DemoBackendProcessTest, FaultOptionsSetTheInitialState) {
  OptionedBackend backend({"--health", "down", "--fail-percent=100", "--fail-status", "503",
                           "--delay-ms", "200", "--capacity", "7", "--service-ms=3"});
  ASSERT_NE(backend.port(), 0) << backend.process().output();
  HttpClient client(backend.port());
  const auto state = client.get("/control");
  EXPECT_EQ(state.body(),
            R"({"health":"down","fail_percent":100,"fail_status":"503","delay_ms":200,)"
            R"("capacity":7,"service_ms":3,"in_service":0,"queued":0})");
  const auto started = Clock::now();
  EXPECT_EQ(client.get("/healthz").result_int(), 503U);
  EXPECT_GE(Clock::now() - started, std::chrono::milliseconds(200));
  EXPECT_EQ(client.get("/ok").body(), R"({"error":"injected_failure"})");

  OptionedBackend resetting({"--fail-percent", "50", "--fail-status=reset"});
  ASSERT_NE(resetting.port(), 0) << resetting.process().output();
  const auto request = "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(raw_exchange(resetting.port(), request).end, net::error::eof);  // the 1st passes
  const auto second = raw_exchange(resetting.port(), request);
  EXPECT_EQ(second.end, net::error::connection_reset) << second.end.message();
  EXPECT_EQ(second.bytes, "");
}

TEST(DemoBackendProcessTest, ThreadsShareOnePort) {
  DemoBackend backend(3);
  for (int i = 0; i < 12; ++i) {
    HttpClient client(backend.port());
    EXPECT_EQ(port_header(client.get("/ok")), std::to_string(backend.port()));
  }
}

TEST(DemoBackendProcessTest, ExitsZeroOnSigtermAndSigint) {
  DemoBackend terminated(2);
  EXPECT_EQ(terminated.stop(), 0) << terminated.process().output();
  DemoBackend interrupted;
  HttpClient idle(interrupted.port());  // an open connection doesn't hold the exit up
  ASSERT_TRUE(interrupted.process().send_signal(SIGINT));
  EXPECT_EQ(interrupted.process().wait_exit(), 0) << interrupted.process().output();
  EXPECT_TRUE(idle.closed_by_peer());
}

TEST(DemoBackendProcessTest, BadArgumentsExitTwoWithAMessage) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--threads", "0"},
                                                                {"--port", "70000"},
                                                                {"--address", "nowhere"},
                                                                {"--bogus"},
                                                                {"--port"},
                                                                {"--health", "sick"},
                                                                {"--fail-percent", "101"},
                                                                {"--fail-status", "500"},
                                                                {"--delay-ms", "600001"},
                                                                {"--delay-ms"},
                                                                {"--capacity", "100001"},
                                                                {"--service-ms", "x"}}) {
    std::vector<std::string> argv{SLUICE_DEMO_BACKEND};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv);
    EXPECT_EQ(p.wait_exit(), 2) << args[0];
    EXPECT_NE(p.stderr_text().find("usage: sluice-demo-backend"), std::string::npos);
    EXPECT_EQ(p.stdout_text(), "");
  }
}

TEST(DemoBackendProcessTest, ExitsOneWhenThePortIsTaken) {
  const testing::RawPeer holder(testing::RawPeer::Mode::kNeverAnswer);  // no SO_REUSEPORT
  ChildProcess p({SLUICE_DEMO_BACKEND, "--port", std::to_string(holder.port())});
  EXPECT_EQ(p.wait_exit(), 1) << p.output();
  EXPECT_NE(p.stderr_text().find("sluice-demo-backend: "), std::string::npos);
}

}  // namespace
}  // namespace sluice
