// SPDX-License-Identifier: Apache-2.0
// Bodies stream through the gateway in both directions, with either framing, and its memory
// stays flat whatever the size (issue: 200 MB each way, RSS growth under 32 MB).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/rss.hpp"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;

constexpr std::uint64_t kBig = 200ULL * 1024 * 1024;
constexpr std::size_t kMaxGrowth = 32ULL * 1024 * 1024;
// The harness reads the response while it uploads, and each read is bounded by this: it must
// cover a whole 200 MB upload on a loaded machine under TSan (several seconds), not one chunk.
constexpr std::chrono::seconds kTransferTimeout{60};

/// Samples a process's RSS every 20 ms while alive; peak() is the largest value seen.
class RssSampler {
 public:
  explicit RssSampler(pid_t pid) : pid_(pid), peak_(rss_bytes(pid)) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const std::size_t now = rss_bytes(pid_);
        if (now > peak_.load()) {
          peak_.store(now);
        }
        std::this_thread::sleep_for(milliseconds(20));
      }
    });
  }
  ~RssSampler() {
    stop_.store(true);
    thread_.join();
  }
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;
  [[nodiscard]] std::size_t peak() const { return peak_.load(); }

 private:
  pid_t pid_;
  std::atomic<std::size_t> peak_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class StreamingTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  void SetUp() override {
    config["http"] = {{"max_body_bytes", 1099511627776ULL}};  // the largest allowed: 1 TiB
    config["backends"]["demo"]["timeout_ms"] = 20000;
    gateway = std::make_unique<SluiceProcess>(config);
    // Warm up: the first requests allocate pools and buffers that later ones reuse.
    HttpClient client(gateway->proxy_port());
    ASSERT_EQ(client.request(http::verb::post, "/echo", {}, std::string(100000, 'w')).body().size(),
              100000U);
    baseline = rss_bytes(gateway->process().pid());
  }
  std::unique_ptr<SluiceProcess> gateway;
  std::size_t baseline = 0;
};

TEST_F(StreamingTest, DownloadsA200MBBodyWithFlatMemory) {
  RssSampler rss(gateway->process().pid());
  const StreamResult r = stream_download(gateway->proxy_port(), "/bytes/" + std::to_string(kBig),
                                         {}, kTransferTimeout);
  EXPECT_EQ(r.status, 200U) << r.error;
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.body_bytes, kBig);
  EXPECT_TRUE(r.pattern_ok) << "first mismatch at " << r.first_mismatch;
  EXPECT_LT(rss.peak() - baseline, kMaxGrowth);
}

TEST_F(StreamingTest, UploadsA200MBChunkedBodyWithFlatMemory) {
  RssSampler rss(gateway->process().pid());
  const StreamResult r =
      stream_upload(gateway->proxy_port(), "/count", kBig, true, {}, kTransferTimeout);
  EXPECT_EQ(r.status, 200U) << r.error;
  EXPECT_EQ(r.bytes_sent, kBig);
  EXPECT_EQ(nlohmann::json::parse(r.body_prefix)["bytes"], kBig) << r.body_prefix;
  EXPECT_LT(rss.peak() - baseline, kMaxGrowth);
}

TEST_F(StreamingTest, UploadsA200MBContentLengthBodyWithFlatMemory) {
  RssSampler rss(gateway->process().pid());
  const StreamResult r =
      stream_upload(gateway->proxy_port(), "/count", kBig, false, {}, kTransferTimeout);
  EXPECT_EQ(r.status, 200U) << r.error;
  EXPECT_EQ(nlohmann::json::parse(r.body_prefix)["bytes"], kBig) << r.body_prefix;
  EXPECT_LT(rss.peak() - baseline, kMaxGrowth);
}

TEST_F(StreamingTest, EchoesA200MBBodyBothWaysAtOnce) {
  RssSampler rss(gateway->process().pid());
  for (const bool chunked : {true, false}) {
    const StreamResult r =
        stream_upload(gateway->proxy_port(), "/echo", kBig / 2, chunked, {}, kTransferTimeout);
    EXPECT_EQ(r.status, 200U) << r.error;
    EXPECT_TRUE(r.complete) << r.error;
    EXPECT_EQ(r.body_bytes, kBig / 2);
    EXPECT_TRUE(r.pattern_ok) << "first mismatch at " << r.first_mismatch;
  }
  EXPECT_LT(rss.peak() - baseline, kMaxGrowth);
}

TEST_F(StreamingTest, SmallChunkedBodiesArriveWhole) {
  HttpClient client(gateway->proxy_port());
  client.send_raw(
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;ext=1\r\n,\r\n6\r\n world\r\n0\r\n\r\n");
  const auto res = client.read_response();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "hello, world");
  client.send_raw("POST /count HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  const auto empty = client.read_response();
  ASSERT_TRUE(empty);
  EXPECT_EQ(nlohmann::json::parse(empty->body())["bytes"], 0);
}

}  // namespace
}  // namespace sluice::testing
