// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gateway/config/config.hpp"

namespace sluice::log {

/// One access log line (docs/access-log.md). Views must outlive the write() call only.
struct AccessRecord {
  std::chrono::system_clock::time_point ts;
  std::string_view request_id;
  std::string_view method;
  std::string_view path;  ///< without the query: queries can carry secrets
  std::string_view route;
  std::string_view backend;
  std::string_view endpoint;
  std::optional<std::string_view> user;  ///< a keyed hash, never the credential
  unsigned status = 0;
  std::uint64_t bytes_in = 0;   ///< request body bytes received from the client
  std::uint64_t bytes_out = 0;  ///< response body bytes sent to the client
  double duration_ms = 0;
  std::optional<double> upstream_ms;      ///< from sending upstream to its response header
  unsigned attempts = 0;                  ///< upstream attempts (0: never sent upstream)
  std::string_view limit = "none";        ///< allowed | limited | shadow_limited | none
  std::string_view breaker = "off";       ///< pass | dropped | off
  std::string_view client_ip;             ///< the client as identified (through trusted proxies)
  std::string_view host;                  ///< the request's Host; empty is written as null
  std::string_view protocol;              ///< HTTP/1.1, HTTP/1.0
  std::string_view listener = "default";  ///< the name of the listener the request came in on
  std::string_view auth = "none";         ///< the credential that named the user: jwt | api_key
  std::string_view tier;                  ///< the verified user's tier; empty is written as null
  /// A gRPC call's status (docs/grpc.md); -1 for other requests and calls that ended without
  /// one, written as null.
  int grpc_status = -1;
};

/// The access log: one JSON object per line, to a file or stdout ("-"), without ever blocking
/// an I/O thread (docs/decisions/0007-access-log-writer.md):
/// - each worker formats its lines into its own Batch (no lock, no wake-up per line) and hands
///   the batch to the writer when it holds ~64 KiB or when the worker's tick calls flush()
///   (at least every 250 ms), so every line reaches the file within a second;
/// - one writer thread writes each batch with write(2), no stdio buffering;
/// - the queue between them is bounded: when it is full, the batch being handed over is dropped
///   and its lines are counted (dropped_lines(), `sluice_access_log_dropped_total`);
/// - reopen() (SIGUSR1, for logrotate) makes the writer reopen `path` before its next write.
/// Thread-safe. Construction throws std::runtime_error when the file cannot be opened.
class AccessLog {
 public:
  /// Lines of one thread. Confined to that thread; the AccessLog outlives it.
  class Batch {
   public:
    explicit Batch(AccessLog& log);
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    ~Batch();
    void write(const AccessRecord& record);
    /// Hands over what is buffered (cheap when empty).
    void flush();

   private:
    AccessLog& log_;
    std::string text_;
    std::size_t lines_ = 0;
  };

  /// Tuning for tests; the defaults are what the gateway uses.
  struct Options {
    std::size_t batch_bytes = std::size_t{64} * 1024;  ///< a batch is handed over at this size
    std::size_t queue_batches = 64;                    ///< batches waiting for the writer at most
  };

  explicit AccessLog(const config::AccessLogConfig& config) : AccessLog(config, Options{}) {}
  AccessLog(const config::AccessLogConfig& config, Options options);
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;
  /// Writes out everything handed over, then stops the writer.
  ~AccessLog();

  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  [[nodiscard]] std::unique_ptr<Batch> make_batch() { return std::make_unique<Batch>(*this); }
  /// One line from a thread without a batch, handed over at once.
  void write(const AccessRecord& record);
  /// The writer closes and reopens `path` (append) before its next write. Lines handed over
  /// before this call may still land in the old file; later ones go to the new one.
  void reopen();
  /// Blocks until everything handed over so far is written.
  void flush();

  [[nodiscard]] std::uint64_t dropped_lines() const noexcept { return dropped_.load(); }
  [[nodiscard]] std::uint64_t written_lines() const noexcept { return written_.load(); }

  /// The JSON line for a record, without the newline.
  [[nodiscard]] static std::string format(const AccessRecord& record);
  /// Appends the line and a newline to `out`.
  static void append(const AccessRecord& record, std::string& out);

 private:
  struct Chunk {
    std::string text;
    std::size_t lines = 0;
  };

  void hand_over(std::string& text, std::size_t lines);
  void run_writer();
  bool open_file();
  void write_chunk(const Chunk& chunk);
  [[nodiscard]] std::string take_buffer();

  const bool enabled_;
  const std::string path_;
  const Options options_;
  int fd_ = -1;
  bool owns_fd_ = false;

  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<Chunk> queue_;
  std::vector<std::string> spare_;  ///< written buffers, capacity kept for the next batches
  bool stopping_ = false;
  bool writing_ = false;
  bool reopen_ = false;
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> written_{0};
  std::thread writer_;
};

}  // namespace sluice::log
