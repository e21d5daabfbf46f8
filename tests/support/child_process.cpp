// SPDX-License-Identifier: Apache-2.0
#include "tests/support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <stdexcept>
#include <system_error>

extern char** environ;  // NOLINT(readability-identifier-naming): POSIX's name

namespace sluice::testing {
namespace {

/// `name=value` strings: the current environment minus the names in `env`, then `env`.
std::vector<std::string> make_environment(const ChildProcess::Env& env) {
  std::vector<std::string> result;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto name = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [key, value] : env) {
      overridden = overridden || key == name;
    }
    if (!overridden) {
      result.emplace_back(text);
    }
  }
  for (const auto& [key, value] : env) {
    result.push_back(key);
    result.back().append("=").append(value);
  }
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (auto& s : strings) {
    result.push_back(s.data());
  }
  result.push_back(nullptr);
  return result;
}

void make_pipe(std::array<int, 2>& fds) {
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
}

/// Spawns with stdin from /dev/null, stdout/stderr into the pipes, default signal dispositions
/// and an empty signal mask (the test process may ignore SIGPIPE or block signals).
pid_t spawn(std::vector<std::string> argv, std::vector<std::string> envp, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  auto args = pointers(argv);
  auto env = pointers(envp);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, &attr, args.data(), env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw std::runtime_error("cannot start " + argv[0] + ": " +
                             std::generic_category().message(rc));
  }
  return pid;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, const Env& env) : argv_(std::move(argv)) {
  if (argv_.empty()) {
    throw std::invalid_argument("ChildProcess: empty argv");
  }
  std::array<int, 2> out{-1, -1};
  std::array<int, 2> err{-1, -1};
  std::array<int, 2> wake{-1, -1};
  make_pipe(out);
  make_pipe(err);
  make_pipe(wake);
  try {
    pid_ = spawn(argv_, make_environment(env), out[1], err[1]);
  } catch (...) {
    for (const int fd : {out[0], out[1], err[0], err[1], wake[0], wake[1]}) {
      ::close(fd);
    }
    throw;
  }
  ::close(out[1]);  // the child holds the write ends now
  ::close(err[1]);
  wake_fds_[0] = wake[0];
  wake_fds_[1] = wake[1];
  reader_ = std::thread([this, out_fd = out[0], err_fd = err[0]] { read_output(out_fd, err_fd); });
}

ChildProcess::~ChildProcess() {
  if (!exit_code_) {
    ::kill(pid_, SIGKILL);
    try_reap(/*block=*/true);
  }
  wait_drained(std::chrono::seconds(1));  // a grandchild could still hold the pipes open
  const char stop = 1;
  [[maybe_unused]] const auto written = ::write(wake_fds_[1], &stop, 1);
  reader_.join();
  ::close(wake_fds_[0]);
  ::close(wake_fds_[1]);
}

void ChildProcess::read_output(int out_fd, int err_fd) {
  std::array<pollfd, 3> fds{pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0},
                            pollfd{wake_fds_[0], POLLIN, 0}};
  std::array<char, 4096> buffer{};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if (fds[2].revents != 0) {
      break;  // the destructor gave up waiting for the end of the streams
    }
    for (std::size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      const auto n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        append(static_cast<OutputStream>(i), {buffer.data(), static_cast<std::size_t>(n)});
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
      }
    }
  }
  for (std::size_t i = 0; i < 2; ++i) {
    if (fds[i].fd >= 0) {
      ::close(fds[i].fd);
    }
  }
  finish_streams();
}

void ChildProcess::append(OutputStream stream, std::string_view chunk) {
  const auto index = static_cast<std::size_t>(stream);
  const std::lock_guard lock(mutex_);
  output_.append(chunk);
  text_[index].append(chunk);
  std::string& partial = partial_[index];
  partial.append(chunk);
  std::size_t start = 0;
  for (auto nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n', start)) {
    std::string line = partial.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    lines_.push_back({stream, std::move(line)});
    start = nl + 1;
  }
  partial.erase(0, start);
  changed_.notify_all();
}

void ChildProcess::finish_streams() {
  const std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < 2; ++i) {
    if (!partial_[i].empty()) {
      lines_.push_back({static_cast<OutputStream>(i), std::move(partial_[i])});
      partial_[i].clear();
    }
  }
  drained_ = true;
  changed_.notify_all();
}

bool ChildProcess::wait_for(std::size_t first_line, std::optional<OutputStream> stream,
                            std::string_view substring, std::chrono::milliseconds timeout,
                            std::string* line) {
  std::unique_lock lock(mutex_);
  std::size_t next = first_line;
  const auto found = [&] {
    for (; next < lines_.size(); ++next) {
      const auto& candidate = lines_[next];
      if ((!stream || candidate.stream == *stream) &&
          candidate.text.find(substring) != std::string::npos) {
        if (line != nullptr) {
          *line = candidate.text;
        }
        return true;
      }
    }
    return drained_;  // nothing more will come
  };
  if (!changed_.wait_for(lock, timeout, found)) {
    return false;
  }
  return next < lines_.size();
}

bool ChildProcess::wait_for_line(std::string_view substring, std::chrono::milliseconds timeout,
                                 std::string* line) {
  return wait_for(0, std::nullopt, substring, timeout, line);
}

bool ChildProcess::wait_for_line(OutputStream stream, std::string_view substring,
                                 std::chrono::milliseconds timeout, std::string* line) {
  return wait_for(0, stream, substring, timeout, line);
}

bool ChildProcess::wait_for_line_after(std::size_t first_line, std::string_view substring,
                                       std::chrono::milliseconds timeout, std::string* line) {
  return wait_for(first_line, std::nullopt, substring, timeout, line);
}

std::size_t ChildProcess::line_count() const {
  const std::lock_guard lock(mutex_);
  return lines_.size();
}

std::vector<OutputLine> ChildProcess::lines() const {
  const std::lock_guard lock(mutex_);
  return lines_;
}

std::size_t ChildProcess::count_lines(std::string_view substring) const {
  const std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& l : lines_) {
    count += l.text.find(substring) != std::string::npos ? 1 : 0;
  }
  return count;
}

std::string ChildProcess::output() const {
  const std::lock_guard lock(mutex_);
  return output_;
}

std::string ChildProcess::stdout_text() const {
  const std::lock_guard lock(mutex_);
  return text_[0];
}

std::string ChildProcess::stderr_text() const {
  const std::lock_guard lock(mutex_);
  return text_[1];
}

bool ChildProcess::send_signal(int signal) {
  if (exit_code_ || try_reap(/*block=*/false)) {
    return false;  // never signal a reaped pid: it may belong to someone else by now
  }
  return ::kill(pid_, signal) == 0;
}

std::optional<int> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(500);
  while (!exit_code_ && !try_reap(/*block=*/false)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
  }
  wait_drained(std::chrono::seconds(1));
  return exit_code_;
}

bool ChildProcess::running() {
  return !exit_code_ && !try_reap(/*block=*/false);
}

bool ChildProcess::try_reap(bool block) {
  int status = 0;
  pid_t rc = -1;
  do {
    rc = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc != pid_) {
    return false;
  }
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

bool ChildProcess::wait_drained(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] { return drained_; });
}

ProcessResult run_process(std::vector<std::string> argv, std::chrono::milliseconds timeout,
                          const ChildProcess::Env& env) {
  ChildProcess child(std::move(argv), env);
  const auto code = child.wait_exit(timeout);
  if (!code) {
    throw std::runtime_error(child.argv().front() + " did not exit within " +
                             std::to_string(timeout.count()) + " ms; output so far:\n" +
                             child.output());
  }  // ~ChildProcess kills it
  return {*code, child.stdout_text(), child.stderr_text()};
}

}  // namespace sluice::testing
