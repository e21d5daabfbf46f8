// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/replay_command.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "gateway/config/config_loader.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/log/user_hash.hpp"
#include "gateway/replay/replay_session.hpp"

namespace sluice::app {
namespace {

constexpr std::size_t kReplayReadBytes = std::size_t{1} << 20U;
constexpr auto kReplayProgressEvery = std::chrono::seconds(3);

/// The key of the log's `user` labels, from the variable NEW's `access_log.user_hash_key_env`
/// names. Without it, override keys (raw user keys) cannot be matched to labels: say so.
std::optional<core::KeyedHash> replay_user_hash(const config::Config& next, std::ostream& err) {
  bool has_overrides = false;
  for (const auto& [policy, keys] : next.overrides) {
    has_overrides = has_overrides || !keys.empty();
  }
  std::string error;
  auto hash = log::user_hash_from_env(next.access_log, error);
  if (!hash && has_overrides) {
    const auto& variable = next.access_log.user_hash_key_env;
    err << "sluice replay: warning: overrides cannot be matched to the log's users: "
        << (variable ? "the variable access_log.user_hash_key_env names (" + *variable +
                           ") does not hold the log's secret"
                     : std::string("access_log.user_hash_key_env is not set"))
        << "; override keys are raw user keys and the log holds their hashed labels, so those "
           "users are replayed with their policy's limit\n";
  }
  return hash;
}

/// Closes a file descriptor we opened (never stdin).
struct ReplayInput {
  int fd = STDIN_FILENO;
  ReplayInput() = default;
  ReplayInput(const ReplayInput&) = delete;
  ReplayInput& operator=(const ReplayInput&) = delete;
  ~ReplayInput() {
    if (fd != STDIN_FILENO && fd >= 0) {
      ::close(fd);
    }
  }
};

/// Feeds the whole of `fd` to the session, with progress on `err` every few seconds. False
/// (said on `err`) when reading fails.
bool replay_all(int fd, const std::string& name, replay::ReplaySession& session,
                std::ostream& err) {
  const core::SteadyClock clock;  // progress only: the replay itself runs on logged time
  const core::TimePoint start = clock.now();
  core::TimePoint last_progress = start;
  std::vector<char> buffer(kReplayReadBytes);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      err << "sluice replay: cannot read " << name << ": " << std::strerror(errno)
          << '\n';  // NOLINT(concurrency-mt-unsafe): one thread
      return false;
    }
    if (n == 0) {
      return true;
    }
    session.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    const core::TimePoint now = clock.now();
    if (now - last_progress >= kReplayProgressEvery) {
      last_progress = now;
      const double seconds = std::chrono::duration<double>(now - start).count();
      err << fmt::format("sluice replay: {} lines, {:.0f} lines/s\n", session.lines(),
                         static_cast<double>(session.lines()) / seconds);
    }
  }
}

}  // namespace

int run_replay(const ReplayArgs& args, std::ostream& out, std::ostream& err) {
  const config::LoadResult loaded = config::load_config_file(args.config_path);
  if (!loaded.ok()) {
    for (const config::Problem& problem : loaded.problems) {
      err << config::to_string(problem) << '\n';
    }
    return 1;
  }
  ReplayInput input;
  if (args.log_path != "-") {
    input.fd = ::open(args.log_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (input.fd < 0) {
      err << "sluice replay: cannot read " << args.log_path << ": " << std::strerror(errno)
          << '\n';  // NOLINT(concurrency-mt-unsafe): one thread
      return 1;
    }
  }
  replay::ReplayOptions options;
  options.top_users = args.top;
  options.user_hash = replay_user_hash(*loaded.config, err);
  replay::ReplaySession session(*loaded.config, std::move(options));
  if (!replay_all(input.fd, args.log_path == "-" ? "stdin" : args.log_path, session, err)) {
    return 1;
  }
  session.finish();
  const replay::ReplayReport report = session.report();
  for (const replay::BadLine& bad : session.bad_lines()) {
    err << "sluice replay: malformed line " << bad.number << ": " << bad.reason << '\n';
  }
  if (report.malformed > session.bad_lines().size()) {
    err << "sluice replay: " << report.malformed - session.bad_lines().size()
        << " more malformed lines\n";
  }
  if (args.json) {
    out << replay::to_json(report).dump(2) << '\n';
  } else {
    replay::write_text(report, out);
  }
  return 0;
}

}  // namespace sluice::app
