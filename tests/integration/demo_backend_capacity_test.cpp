// SPDX-License-Identifier: Apache-2.0
// The demo backend's overload model through the real binary (gateway/demo/service_capacity):
// `--capacity C --service-ms S` and their /control parameters. At most C requests are served
// at once, S ms each, the rest wait in one FIFO queue for the whole process. Timing asserts are
// lower bounds only (a slow machine makes requests later, never earlier); the rest waits on the
// load GET /control reports.
#include <algorithm>
#include <thread>

#include "tests/integration/demo_backend_fixture.hpp"

namespace sluice {
namespace {

using namespace demo_backend_support;  // NOLINT(google-build-using-namespace)
using std::chrono::milliseconds;

std::string get_request(std::string_view target) {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: a\r\n\r\n";
}

/// The `in_service` and `queued` GET /control reports.
std::pair<int, int> load_of(HttpClient& client) {
  const auto json = nlohmann::json::parse(client.get("/control").body());
  return {json.at("in_service").get<int>(), json.at("queued").get<int>()};
}

/// Polls GET /control until it reports `in_service` and `queued` (true), or `timeout` passes.
bool wait_for_load(std::uint16_t port, int in_service, int queued,
                   milliseconds timeout = testing::kDefaultTimeout) {
  HttpClient client(port);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (load_of(client) == std::pair{in_service, queued}) {
      return true;
    }
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "load stays " << load_of(client).first << " in service, "
                    << load_of(client).second << " queued; want " << in_service << ", " << queued;
      return false;
    }
    std::this_thread::sleep_for(milliseconds(5));  // a poll interval, not a wait for time
  }
}

/// How one of a burst of requests ended: its status and when its answer had arrived, from
/// just before the first request of the burst was sent.
struct Finish {
  unsigned status = 0;
  Clock::duration after{};
};

/// Sends `GET target` on `count` connections at once (all connected first), reads every answer
/// on a thread of its own, and returns how each ended, earliest first.
std::vector<Finish> burst(std::uint16_t port, int count, std::string_view target) {
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < count; ++i) {
    clients.push_back(std::make_unique<HttpClient>(port, milliseconds(30000)));
  }
  const auto started = Clock::now();
  for (auto& client : clients) {
    client->send_raw(get_request(target));
  }
  std::vector<Finish> finishes(clients.size());
  std::vector<std::thread> readers;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    readers.emplace_back([&, i] {
      const auto res = clients[i]->read_response(milliseconds(30000));
      finishes[i] = {res ? res->result_int() : 0, Clock::now() - started};
    });
  }
  for (auto& reader : readers) {
    reader.join();
  }
  std::sort(finishes.begin(), finishes.end(),
            [](const Finish& a, const Finish& b) { return a.after < b.after; });
  return finishes;
}

TEST(DemoBackendCapacityTest, ServesTheCapacityAtOnceAndTheRestInWaves) {
  constexpr milliseconds kService{50};
  OptionedBackend backend({"--threads", "2", "--capacity", "2", "--service-ms", "50"});
  ASSERT_NE(backend.port(), 0) << backend.process().output();
  HttpClient control(backend.port());
  const auto settings = nlohmann::json::parse(control.get("/control").body());
  EXPECT_EQ(settings["capacity"], 2);
  EXPECT_EQ(settings["service_ms"], 50);

  const auto finishes = burst(backend.port(), 6, "/ok");
  // Two slots of 50 ms each, shared by both threads: the k-th answer (1-based) cannot have
  // arrived before ceil(k/2) waves of service, so the 5th and 6th take at least 3 x 50 ms.
  for (std::size_t k = 1; k <= finishes.size(); ++k) {
    EXPECT_EQ(finishes[k - 1].status, 200U) << k;
    EXPECT_GE(finishes[k - 1].after, static_cast<int>((k + 1) / 2) * kService) << k;
  }
  // A slot is given back once its answer is written, which the client may read first.
  EXPECT_TRUE(wait_for_load(backend.port(), 0, 0));
}

TEST(DemoBackendCapacityTest, ControlChangesTheCapacityLive) {
  // Each step below is read while the requests of the step before still hold their slots
  // (3 s), which is long enough for a loaded machine to poll /control a few times.
  OptionedBackend backend({"--threads", "2", "--capacity", "1", "--service-ms", "10"});
  ASSERT_NE(backend.port(), 0) << backend.process().output();
  HttpClient control(backend.port());
  const auto raised = nlohmann::json::parse(
      control.request(http::verb::post, "/control?capacity=4&service_ms=3000").body());
  EXPECT_EQ(raised["capacity"], 4);
  EXPECT_EQ(raised["service_ms"], 3000);

  std::vector<std::unique_ptr<HttpClient>> first;
  for (int i = 0; i < 4; ++i) {
    first.push_back(std::make_unique<HttpClient>(backend.port()));
    first.back()->send_raw(get_request("/ok"));
  }
  ASSERT_TRUE(wait_for_load(backend.port(), 4, 0));  // four at once, none waits

  // Lowered while those four hold their slots: they finish, and the next slot is handed out
  // only once fewer than one request is in service.
  EXPECT_EQ(control.request(http::verb::post, "/control?capacity=1").result_int(), 200U);
  std::vector<std::unique_ptr<HttpClient>> second;
  for (int i = 0; i < 2; ++i) {
    second.push_back(std::make_unique<HttpClient>(backend.port()));
    second.back()->send_raw(get_request("/ok"));
  }
  EXPECT_TRUE(wait_for_load(backend.port(), 4, 2));
  for (auto& client : first) {
    const auto res = client->read_response();
    ASSERT_TRUE(res);
    EXPECT_EQ(res->result_int(), 200U);
  }
  EXPECT_TRUE(wait_for_load(backend.port(), 1, 1));

  // Raised again: the queue's front gets its slot at once.
  EXPECT_EQ(control.request(http::verb::post, "/control?capacity=0").result_int(), 200U);
  EXPECT_TRUE(wait_for_load(backend.port(), 2, 0));
}

TEST(DemoBackendCapacityTest, HealthAndControlNeverQueueAndALeavingClientGivesUpItsPlace) {
  OptionedBackend backend({"--threads", "2", "--capacity", "1", "--service-ms", "20000"});
  ASSERT_NE(backend.port(), 0) << backend.process().output();
  HttpClient holder(backend.port());
  holder.send_raw(get_request("/ok"));
  ASSERT_TRUE(wait_for_load(backend.port(), 1, 0));
  HttpClient leaver(backend.port());
  leaver.send_raw(get_request("/ok"));
  HttpClient stayer(backend.port());
  stayer.send_raw(get_request("/headers"));
  ASSERT_TRUE(wait_for_load(backend.port(), 1, 2));

  // No slot is free for 20 s, yet these answer within the client's 5 s.
  HttpClient probe(backend.port());
  EXPECT_EQ(probe.get("/healthz").result_int(), 200U);
  EXPECT_EQ(probe.request(http::verb::post, "/control?fail_percent=0").result_int(), 200U);

  leaver.close();  // its place goes at once, not when its turn would have come
  EXPECT_TRUE(wait_for_load(backend.port(), 1, 1));

  // Stopping with a slot held and a request queued is a clean exit (ASan builds check more).
  ASSERT_TRUE(backend.process().send_signal(SIGTERM));
  EXPECT_EQ(backend.process().wait_exit(), 0) << backend.process().output();
}

TEST(DemoBackendCapacityTest, ABodyArrivingWhileQueuedIsNoDeparture) {
  OptionedBackend backend({"--capacity", "1"});
  ASSERT_NE(backend.port(), 0) << backend.process().output();
  HttpClient holder(backend.port());
  holder.send_raw(get_request("/slow/2000"));
  ASSERT_TRUE(wait_for_load(backend.port(), 1, 0));
  HttpClient uploader(backend.port());
  uploader.send_raw("POST /count HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n");
  ASSERT_TRUE(wait_for_load(backend.port(), 1, 1));
  uploader.send_raw("hello");  // readable while queued: the body, not the client leaving

  const auto slow = holder.read_response();
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->body(), "slow\n");
  const auto counted = uploader.read_response();
  ASSERT_TRUE(counted);
  EXPECT_EQ(counted->body(), R"({"bytes":5})");
  EXPECT_TRUE(wait_for_load(backend.port(), 0, 0));  // given back once answered
}

}  // namespace
}  // namespace sluice
