// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::testing {

struct ProcessResult {
  int exit_code = -1;  ///< -1 if the process did not exit normally
  std::string out;
  std::string err;
};

namespace detail {
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace detail

/// Runs `argv` (argv[0] is the program path; no shell) to completion, capturing its output
/// through temporary files. For tests of short-lived commands.
inline ProcessResult run_process(const std::vector<std::string>& argv) {
  char out_path[] = "/tmp/sluice-test-out-XXXXXX";
  char err_path[] = "/tmp/sluice-test-err-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) {
    throw std::runtime_error("mkstemp failed");
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(out_fd);
  close(err_fd);
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = detail::slurp(out_path);
  result.err = detail::slurp(err_path);
  unlink(out_path);
  unlink(err_path);
  return result;
}

}  // namespace sluice::testing
