// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

enum class OutputStream { kStdout, kStderr };

/// One complete line of a child's output, without its '\n' (and without a trailing '\r').
struct OutputLine {
  OutputStream stream = OutputStream::kStdout;
  std::string text;
};

/// A child process for integration tests, and the one process runner of tests/support (the
/// gateway, the demo backend, redis-server and run_process all start theirs through it):
/// argv[0] is a path (no shell, no PATH search), stdin
/// is /dev/null, and stdout and stderr are captured through pipes by a reader thread into lines
/// (an unterminated last line counts once the stream ends) and into the full text.
///
/// Everything read is kept in memory until destruction (lines and text), so a gateway with
/// the access log on stdout grows the test process by a few hundred bytes per request.
///
/// Thread-safety: the output accessors and wait_for_line* may be called from any thread (the
/// reader thread appends under a mutex). send_signal, wait_exit and running are meant for one
/// thread (the test's). Lifetime: the destructor SIGKILLs the child if it is still running,
/// reaps it and joins the reader; it never blocks for long.
class ChildProcess {
 public:
  using Env = std::vector<std::pair<std::string, std::string>>;

  /// Starts the child with the test's environment plus `env` (which overrides variables of the
  /// same name). Throws std::runtime_error if it cannot be started (e.g. no such file).
  explicit ChildProcess(std::vector<std::string> argv, const Env& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] const std::vector<std::string>& argv() const noexcept { return argv_; }

  /// Waits until a line of either stream contains `substring` (lines already read count too).
  /// Copies the line to `*line` if given. False on timeout, or at once when both streams have
  /// ended without such a line (the child exited). Callers assert on the result, e.g.
  /// `ASSERT_TRUE(p.wait_for_line("ready")) << p.output();`.
  [[nodiscard]] bool wait_for_line(std::string_view substring,
                                   std::chrono::milliseconds timeout = kDefaultTimeout,
                                   std::string* line = nullptr);
  /// Same, but only lines of `stream`.
  [[nodiscard]] bool wait_for_line(OutputStream stream, std::string_view substring,
                                   std::chrono::milliseconds timeout = kDefaultTimeout,
                                   std::string* line = nullptr);
  /// Same as the first, but only lines with index >= `first_line` (see line_count()): to wait
  /// for a line that appears after some event, e.g. a second "reloaded" after a second SIGHUP.
  [[nodiscard]] bool wait_for_line_after(std::size_t first_line, std::string_view substring,
                                         std::chrono::milliseconds timeout = kDefaultTimeout,
                                         std::string* line = nullptr);

  /// Complete lines read so far, both streams, in the order they were read.
  [[nodiscard]] std::size_t line_count() const;
  [[nodiscard]] std::vector<OutputLine> lines() const;
  /// How many lines so far contain `substring`.
  [[nodiscard]] std::size_t count_lines(std::string_view substring) const;
  /// Everything read so far from both streams, interleaved in the order it was read.
  [[nodiscard]] std::string output() const;
  [[nodiscard]] std::string stdout_text() const;
  [[nodiscard]] std::string stderr_text() const;

  /// Sends `signal` (SIGTERM, SIGHUP, ...). False if the child has already been reaped.
  bool send_signal(int signal);
  /// Waits for the child to exit and reaps it: its exit code, or 128 + the signal that killed
  /// it; nullopt on timeout (the child keeps running). After the exit it also waits (up to 1 s)
  /// for the pipes to be drained, so output() then holds everything the child wrote.
  /// Later calls return the same code at once.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = kDefaultTimeout);
  /// True until the child has exited (reaps it when it has).
  [[nodiscard]] bool running();

 private:
  void read_output(int out_fd, int err_fd);  // reader thread body
  void append(OutputStream stream, std::string_view chunk);
  void finish_streams();
  bool try_reap(bool block);
  [[nodiscard]] bool wait_for(std::size_t first_line, std::optional<OutputStream> stream,
                              std::string_view substring, std::chrono::milliseconds timeout,
                              std::string* line);
  bool wait_drained(std::chrono::milliseconds timeout);

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;  // set once reaped; test thread only
  int wake_fds_[2] = {-1, -1};    // written by the destructor to stop the reader
  std::thread reader_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::vector<OutputLine> lines_;
  std::string partial_[2];  // unterminated tail of stdout, stderr
  std::string text_[2];     // all of stdout, stderr
  std::string output_;      // both, interleaved
  bool drained_ = false;    // both streams reached end of file
};

/// What a command run to completion did (run_process).
struct ProcessResult {
  int exit_code = -1;  ///< its exit code, or 128 + the signal that killed it
  std::string out;     ///< all of stdout
  std::string err;     ///< all of stderr
};

/// Runs `argv` (argv[0] is a path; no shell) to completion as a ChildProcess, for tests of
/// short-lived commands. Throws std::runtime_error if it cannot be started, or if it has not
/// exited within `timeout` (it is killed then, and the message holds its output so far).
ProcessResult run_process(std::vector<std::string> argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30),
                          const ChildProcess::Env& env = {});

}  // namespace sluice::testing
