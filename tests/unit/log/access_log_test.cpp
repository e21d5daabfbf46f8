// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/access_log.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace sluice::log {
namespace {

using namespace std::chrono_literals;

AccessRecord sample() {
  AccessRecord r;
  r.ts = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
  r.request_id = "rid";
  r.method = "GET";
  r.path = "/api/users/7";
  r.route = "users";
  r.backend = "users";
  r.endpoint = "127.0.0.1:9001";
  r.status = 200;
  r.bytes_in = 5;
  r.bytes_out = 10;
  r.duration_ms = 1.5;
  r.upstream_ms = 0.25;
  r.attempts = 2;
  r.client_ip = "192.0.2.1";
  r.host = "api.example";
  r.protocol = "HTTP/1.1";
  r.listener = "public";
  return r;
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

/// A file of the test's own, removed afterwards.
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("sluice-alog-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] std::filesystem::path file(std::string_view name) const { return path_ / name; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

config::AccessLogConfig to_file(const std::filesystem::path& path) {
  config::AccessLogConfig c;
  c.path = path.string();
  return c;
}

TEST(AccessLogTest, FormatsOneJsonObjectWithEveryField) {
  const auto j = nlohmann::json::parse(AccessLog::format(sample()));
  EXPECT_EQ(j["ts"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(j["request_id"], "rid");
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/api/users/7");
  EXPECT_EQ(j["route"], "users");
  EXPECT_EQ(j["backend"], "users");
  EXPECT_EQ(j["endpoint"], "127.0.0.1:9001");
  EXPECT_TRUE(j["user"].is_null());
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["bytes_in"], 5);
  EXPECT_EQ(j["bytes_out"], 10);
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["upstream_ms"].get<double>(), 0.25);
  EXPECT_EQ(j["attempts"], 2);
  EXPECT_EQ(j["limit"], "none");
  EXPECT_EQ(j["breaker"], "off");
  EXPECT_EQ(j["client_ip"], "192.0.2.1");
  EXPECT_EQ(j["host"], "api.example");
  EXPECT_EQ(j["protocol"], "HTTP/1.1");
  EXPECT_EQ(j["listener"], "public");
  EXPECT_EQ(j["auth"], "none");
  EXPECT_TRUE(j["tier"].is_null());
  EXPECT_TRUE(j["grpc_status"].is_null());
  EXPECT_EQ(j.size(), 23U);
}

TEST(AccessLogTest, AGrpcCallShowsItsStatus) {
  AccessRecord r = sample();
  r.grpc_status = 8;
  const auto j = nlohmann::json::parse(AccessLog::format(r));
  EXPECT_EQ(j["grpc_status"], 8);
}

TEST(AccessLogTest, AVerifiedUserShowsItsCredentialAndTier) {
  AccessRecord r = sample();
  r.auth = "jwt";
  r.tier = "gold";
  const auto j = nlohmann::json::parse(AccessLog::format(r));
  EXPECT_EQ(j["auth"], "jwt");
  EXPECT_EQ(j["tier"], "gold");
}

TEST(AccessLogTest, AnEmptyHostAndNoUpstreamAreNull) {
  AccessRecord r = sample();
  r.host = "";
  r.upstream_ms.reset();
  r.user = "0123456789ab";
  const auto j = nlohmann::json::parse(AccessLog::format(r));
  EXPECT_TRUE(j["host"].is_null());
  EXPECT_TRUE(j["upstream_ms"].is_null());
  EXPECT_EQ(j["user"], "0123456789ab");
}

TEST(AccessLogTest, AppendEndsEachLineWithANewline) {
  std::string out;
  AccessLog::append(sample(), out);
  AccessLog::append(sample(), out);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);
  EXPECT_EQ(out.back(), '\n');
}

TEST(AccessLogTest, WritesValidUtf8AsItIsAndEscapesTheRest) {
  struct Case {
    std::string in;
    std::string json;  ///< how it appears between the quotes
  };
  const Case cases[] = {
      {"/plain", "/plain"},
      {"/caf\xc3\xa9", "/caf\xc3\xa9"},                        // 2 bytes: written as is
      {"/\xe2\x82\xac", "/\xe2\x82\xac"},                      // 3 bytes
      {"/\xf0\x9f\x98\x80", "/\xf0\x9f\x98\x80"},              // 4 bytes
      {"/\xc3", "/\\u00c3"},                                   // truncated at the end
      {"/\xc3(", "/\\u00c3("},                                 // a continuation that is not one
      {"/\x80", "/\\u0080"},                                   // a lone continuation byte
      {"/\xc0\xaf", "/\\u00c0\\u00af"},                        // overlong
      {"/\xe0\x80\xaf", "/\\u00e0\\u0080\\u00af"},             // overlong, 3 bytes
      {"/\xed\xa0\x80", "/\\u00ed\\u00a0\\u0080"},             // a surrogate
      {"/\xf4\x90\x80\x80", "/\\u00f4\\u0090\\u0080\\u0080"},  // above U+10FFFF
      {"/\xff", "/\\u00ff"},
      {"/a\"b\\c", "/a\\\"b\\\\c"},
      {std::string("/\x01\x7f\n\t", 5), "/\\u0001\\u007f\\n\\t"},
      {"/{}", "/{}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    AccessRecord r = sample();
    r.path = c.in;
    const std::string line = AccessLog::format(r);
    EXPECT_NE(line.find("\"path\":\"" + c.json + "\""), std::string::npos) << line;
    EXPECT_TRUE(nlohmann::json::accept(line));  // always valid JSON
  }
}

TEST(AccessLogTest, ALineIsInTheFileOnceFlushReturns) {
  TempDir dir;
  const auto path = dir.file("access.log");
  AccessLog log(to_file(path));
  auto batch = log.make_batch();
  batch->write(sample());
  EXPECT_TRUE(lines_of(path).empty());  // still in the thread's batch
  batch->flush();
  log.flush();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["request_id"], "rid");
  EXPECT_EQ(log.written_lines(), 1U);
}

TEST(AccessLogTest, AFullBatchIsHandedOverByItself) {
  TempDir dir;
  const auto path = dir.file("access.log");
  AccessLog log(to_file(path), AccessLog::Options{.batch_bytes = 1000, .queue_batches = 64});
  auto batch = log.make_batch();
  for (int i = 0; i < 10; ++i) {  // about 400 bytes a line: a hand-over every 3 lines
    batch->write(sample());
  }
  log.flush();
  EXPECT_GE(lines_of(path).size(), 9U);
  batch->flush();
  log.flush();
  EXPECT_EQ(lines_of(path).size(), 10U);
}

TEST(AccessLogTest, LinesFromManyThreadsArriveWholeAndAllOfThem) {
  TempDir dir;
  const auto path = dir.file("access.log");
  constexpr int kThreads = 4;
  constexpr int kLines = 2000;
  {
    AccessLog log(to_file(path), AccessLog::Options{.batch_bytes = 4096, .queue_batches = 100000});
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&log, t] {
        auto batch = log.make_batch();
        const std::string id = "thread-" + std::to_string(t);
        for (int i = 0; i < kLines; ++i) {
          AccessRecord r = sample();
          r.request_id = id;
          batch->write(r);
        }
      });
    }
    for (auto& th : threads) {
      th.join();
    }
    EXPECT_EQ(log.dropped_lines(), 0U);
  }  // the destructor writes out everything handed over
  std::map<std::string, int> per_thread;
  for (const auto& line : lines_of(path)) {
    ++per_thread[nlohmann::json::parse(line)["request_id"].get<std::string>()];  // each line whole
  }
  ASSERT_EQ(per_thread.size(), static_cast<std::size_t>(kThreads));
  for (const auto& [id, n] : per_thread) {
    EXPECT_EQ(n, kLines) << id;
  }
}

TEST(AccessLogTest, ReopenAfterARenameStartsAFreshFile) {
  TempDir dir;
  const auto path = dir.file("access.log");
  const auto rotated = dir.file("access.log.1");
  AccessLog log(to_file(path));
  auto batch = log.make_batch();
  batch->write(sample());
  batch->flush();
  log.flush();
  std::filesystem::rename(path, rotated);  // what logrotate does
  batch->write(sample());
  batch->flush();
  log.flush();
  EXPECT_EQ(lines_of(rotated).size(), 2U);  // until reopened, the old file gets the lines
  log.reopen();
  batch->write(sample());
  batch->flush();
  log.flush();
  EXPECT_EQ(lines_of(rotated).size(), 2U);
  EXPECT_EQ(lines_of(path).size(), 1U);
}

TEST(AccessLogTest, AStuckWriterLosesWholeBatchesAndCountsTheirLines) {
  // The writer writes to a pipe nobody reads: once the pipe buffer is full it blocks, the queue
  // fills, and further batches are dropped rather than waited for.
  std::array<int, 2> fds{};
  ASSERT_EQ(::pipe(fds.data()), 0);
  const std::string path = "/dev/fd/" + std::to_string(fds[1]);
  config::AccessLogConfig c;
  c.path = path;
  constexpr int kLines = 2000;
  std::thread reader;
  {
    AccessLog log(c, AccessLog::Options{.batch_bytes = 1, .queue_batches = 4});
    auto batch = log.make_batch();
    for (int i = 0; i < kLines; ++i) {
      batch->write(sample());  // each line its own batch
    }
    EXPECT_GT(log.dropped_lines(), 0U);
    // Let the writer finish: drain the pipe until every writer of it is gone.
    reader = std::thread([fd = fds[0]] {
      std::array<char, 65536> sink{};
      while (::read(fd, sink.data(), sink.size()) > 0) {
      }
    });
    log.flush();
    EXPECT_EQ(log.written_lines() + log.dropped_lines(), static_cast<std::uint64_t>(kLines));
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
}

TEST(AccessLogTest, AnUnopenableFileIsAnErrorNamingThePath) {
  config::AccessLogConfig c;
  c.path = "/nonexistent-dir-for-sluice/access.log";
  try {
    AccessLog log(c);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-for-sluice/access.log"),
              std::string::npos);
  }
}

TEST(AccessLogTest, DisabledDoesNothing) {
  config::AccessLogConfig c;
  c.enabled = false;
  AccessLog log(c);
  EXPECT_FALSE(log.enabled());
  log.write(sample());
  log.flush();
  EXPECT_EQ(log.written_lines(), 0U);
}

}  // namespace
}  // namespace sluice::log
