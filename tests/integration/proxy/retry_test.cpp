// SPDX-License-Identifier: Apache-2.0
// Retries through the real binary against demo backends made to fail on purpose
// (docs/endpoint-health.md "Retries"): a failed attempt goes to another endpoint, only for
// idempotent methods unless opted in, only for small bodies, never while the breaker drops, and
// within the retry budget; every attempt is counted and the log line says how many there were.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

/// Backend "demo" over `backends` with retries on (no backoff) and the breaker as given.
json retry_config(const std::vector<const DemoBackend*>& backends, bool breaker = false) {
  std::vector<std::string> endpoints;
  for (const auto* b : backends) {
    endpoints.push_back(b->endpoint());
  }
  json c = minimal_gateway_config(endpoints);
  c["backends"]["demo"]["breaker"] = {{"enabled", breaker}};
  c["backends"]["demo"]["retry"] = {{"attempts", 2}, {"backoff_ms", 0}};
  return c;
}

double retries(const Scrape& s, const std::string& result) {
  return s.value("sluice_retries_total", {{"backend", "demo"}, {"result", result}});
}

class RetryTest : public ::testing::Test {
 protected:
  std::array<DemoBackend, 3> backends_;
};

TEST_F(RetryTest, AFailedAttemptIsSentToAnotherEndpointAndTheClientSeesNoError) {
  SluiceProcess gateway(retry_config({&backends_[0], &backends_[1], &backends_[2]}));
  set_faults(backends_[1], "fail_percent=100&fail_status=503");
  HttpClient client(gateway.proxy_port());
  for (int i = 0; i < 30; ++i) {
    const Response res = client.get("/ok");
    ASSERT_EQ(res.result_int(), 200) << "request " << i << ": " << res.body();
    EXPECT_NE(res["X-Backend-Port"], std::to_string(backends_[1].port()));
  }
  // An attempt's outcome and its retry's are counted one after the other: wait for both.
  const Scrape s = scrape_until(gateway, "the 30 answers and their retries", [&](const Scrape& t) {
    return t.value("sluice_upstream_requests_total",
                   {{"backend", "demo"}, {"outcome", "success"}}) >= 30 &&
           retries(t, "succeeded") >= t.value("sluice_upstream_requests_total",
                                              {{"backend", "demo"}, {"outcome", "failure"}});
  });
  // Every first attempt that met the failing endpoint was retried elsewhere and got through,
  // and every attempt counts upstream: 30 successes and the failed first attempts.
  const double failed =
      s.value("sluice_upstream_requests_total", {{"backend", "demo"}, {"outcome", "failure"}});
  EXPECT_GE(failed, 10) << "round robin sends at least a third to the failing endpoint";
  EXPECT_EQ(retries(s, "attempted"), failed);
  EXPECT_EQ(retries(s, "succeeded"), failed);
  EXPECT_EQ(retries(s, "budget_exhausted"), 0);
  EXPECT_EQ(
      s.value("sluice_upstream_requests_total", {{"backend", "demo"}, {"outcome", "success"}}), 30);
  EXPECT_TRUE(gateway.process().wait_for_line("\"attempts\":2")) << gateway.process().output();
}

TEST_F(RetryTest, AResetIsRetriedToo) {
  SluiceProcess gateway(retry_config({&backends_[0], &backends_[1]}));
  set_faults(backends_[0], "fail_percent=100&fail_status=reset");
  HttpClient client(gateway.proxy_port());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(client.get("/ok").result_int(), 200) << i;
  }
  const Scrape s = scrape_until(gateway, "the retries",
                                [&](const Scrape& t) { return retries(t, "succeeded") >= 5; });
  EXPECT_EQ(s.value("sluice_upstream_requests_total", {{"backend", "demo"}, {"outcome", "reset"}}),
            5);
}

TEST_F(RetryTest, APostIsNotRetriedUnlessTheBackendOptsIn) {
  json c = retry_config({&backends_[0], &backends_[1]});
  SluiceProcess gateway(c);
  set_faults(backends_[0], "fail_percent=100&fail_status=503");
  HttpClient client(gateway.proxy_port());
  int failed = 0;
  for (int i = 0; i < 10; ++i) {
    failed += client.request(http::verb::post, "/ok", {}, "a=1").result_int() == 503 ? 1 : 0;
  }
  EXPECT_EQ(failed, 5) << "every POST to the failing endpoint reached the client";
  EXPECT_EQ(
      metric_value(gateway, "sluice_retries_total", {{"backend", "demo"}, {"result", "attempted"}}),
      0);

  c["backends"]["demo"]["retry"]["non_idempotent"] = true;
  SluiceProcess opted(c);
  HttpClient other(opted.proxy_port());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(other.request(http::verb::post, "/ok", {}, "a=1").result_int(), 200) << i;
  }
}

TEST_F(RetryTest, ABodyUpToSixtyFourKibibytesIsKeptForReplayALargerOneIsNot) {
  SluiceProcess gateway(retry_config({&backends_[0], &backends_[1]}));
  set_faults(backends_[0], "fail_percent=100&fail_status=503");
  HttpClient client(gateway.proxy_port());
  // 64 KiB is read whole before it goes upstream and kept for replay; 1 MiB streams upstream
  // while it arrives and cannot be sent again.
  const std::string small(64 * 1024, 's');
  const std::string large(1024 * 1024, 'l');
  // (The large ones first: a retry moves the round-robin cursor, so the alternation between
  // the endpoints is only exact while nothing is retried.)
  int large_failed = 0;
  for (int i = 0; i < 4; ++i) {
    large_failed += client.request(http::verb::put, "/count", {}, large).result_int() != 200;
  }
  int small_failed = 0;
  for (int i = 0; i < 4; ++i) {
    const Response res = client.request(http::verb::put, "/count", {}, small);
    small_failed += res.result_int() != 200;
    if (res.result_int() == 200) {
      EXPECT_EQ(json::parse(res.body()).at("bytes"), 64 * 1024) << "the whole body, once";
    }
  }
  EXPECT_EQ(small_failed, 0) << "a small body is kept for replay";
  EXPECT_EQ(large_failed, 2) << "a 1 MiB body is not: half the PUTs met the failing endpoint";
}

TEST_F(RetryTest, HttpTwoStreamsAreRetriedTooBodiesIncluded) {
  json c = retry_config({&backends_[0], &backends_[1]});
  c.erase("listen");
  c["listeners"] = json::array(
      {{{"name", "h2c"}, {"address", "127.0.0.1"}, {"port", 0}, {"http2", {{"enabled", true}}}}});
  SluiceProcess gateway(c);
  set_faults(backends_[0], "fail_percent=100&fail_status=503");
  const std::string body(20000, 'b');  // more than arrives with the head: read whole first
  const std::string url = "http://127.0.0.1:" + std::to_string(gateway.listener_port("h2c"));
  for (int i = 0; i < 4; ++i) {
    const ProcessResult get =
        run_process({"/usr/bin/curl", "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w",
                     "%{http_code} %{http_version}", url + "/ok"});
    EXPECT_EQ(get.out, "200 2") << get.err;
    const ProcessResult put = run_process({"/usr/bin/curl", "-sS", "--http2-prior-knowledge", "-X",
                                           "PUT", "--data-binary", body, url + "/count"});
    EXPECT_EQ(put.out, R"({"bytes":20000})") << put.err;
  }
  EXPECT_GT(
      metric_value(gateway, "sluice_retries_total", {{"backend", "demo"}, {"result", "succeeded"}}),
      0);
}

TEST_F(RetryTest, RetriesStopWhileTheBreakerDrops) {
  // Both endpoints fail every request: the breaker opens after a few, and from then on nothing
  // is retried (a retry would only feed the outage).
  SluiceProcess gateway(retry_config({&backends_[0], &backends_[1]}, true));
  set_faults(backends_[0], "fail_percent=100&fail_status=503");
  set_faults(backends_[1], "fail_percent=100&fail_status=503");
  HttpClient client(gateway.proxy_port());
  int drops = 0;
  for (int i = 0; i < 200; ++i) {
    const Response res = client.get("/ok");
    ASSERT_EQ(res.result_int(), 503);
    drops += error_code(res) == "backend_unavailable" ? 1 : 0;
  }
  EXPECT_GT(drops, 100) << "the client sees the breaker's 503s";
  const Scrape s = scrape_until(gateway, "every attempt counted", [&](const Scrape& t) {
    return t.sum("sluice_upstream_requests_total", {{"backend", "demo"}}) >=
           200 - drops + retries(t, "attempted");
  });
  // The breaker's protection (5) lets the first requests through at p = 0; each is retried
  // once and both attempts enter the window, so p is above 0 after three.
  EXPECT_LE(retries(s, "attempted"), 4) << s.text();
  EXPECT_EQ(s.sum("sluice_upstream_requests_total", {{"backend", "demo"}}),
            200 - drops + retries(s, "attempted"))
      << "the backend saw no retry storm";
}

TEST_F(RetryTest, RetriesInFlightStayWithinTheBudget) {
  // A slow, always failing backend with the breaker off: every request wants a retry, and the
  // budget (max(1, 10% of active requests)) lets few of them go at once.
  json c = retry_config({&backends_[0], &backends_[1]});
  c["backends"]["demo"]["retry"]["min_retry_concurrency"] = 1;
  c["backends"]["demo"]["retry"]["budget_percent"] = 10;
  SluiceProcess gateway(c);
  for (const auto& b : backends_) {
    set_faults(b, "fail_percent=100&fail_status=503&delay_ms=100");
  }
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      HttpClient client(gateway.proxy_port());
      for (int i = 0; i < 5; ++i) {
        answered += client.get("/ok").result_int() == 503 ? 1 : 0;
      }
    });
  }
  for (auto& t : clients) {
    t.join();
  }
  EXPECT_EQ(answered, 40);
  const Scrape s = scrape_until(gateway, "every retry decision", [&](const Scrape& t) {
    return retries(t, "attempted") + retries(t, "budget_exhausted") >= 40;
  });
  EXPECT_EQ(retries(s, "attempted") + retries(s, "budget_exhausted"), 40)
      << "each request asked once: its retry failed too, and attempts is 2";
  EXPECT_GT(retries(s, "budget_exhausted"), 0) << s.text();
  EXPECT_LT(retries(s, "attempted"), 20) << "8 concurrent requests allow one retry at a time";
}

}  // namespace
}  // namespace sluice::testing
