// SPDX-License-Identifier: Apache-2.0
#include "tests/support/sluice_process.hpp"

#include <unistd.h>

#include <charconv>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "tests/support/endpoint_text.hpp"

namespace sluice::testing {
namespace {

void write_file(const std::filesystem::path& path, const nlohmann::json& config) {
  std::ofstream out(path, std::ios::trunc);
  out << config.dump(2) << '\n';
  out.close();
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

/// Writes the config before the process starts (a member-initialiser helper).
std::filesystem::path write_initial(const std::filesystem::path& directory,
                                    const nlohmann::json& config) {
  auto path = directory / "sluice.json";
  write_file(path, config);
  return path;
}

std::vector<std::string> command(const std::filesystem::path& config,
                                 const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv{SLUICE_BINARY, "--config", config.string(), "--log-level", "info"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  return argv;
}

}  // namespace

nlohmann::json minimal_gateway_config(std::vector<std::string> endpoints) {
  return {
      {"listen", {{"address", "127.0.0.1"}, {"port", 0}}},
      {"admin", {{"address", "127.0.0.1"}, {"port", 0}}},
      {"threads", 2},
      {"access_log", {{"enabled", true}, {"path", "-"}}},
      {"backends",
       {{"demo",
         {{"endpoints", std::move(endpoints)},
          {"connect_timeout_ms", 1000},
          {"timeout_ms", 5000}}}}},
      {"routes", nlohmann::json::array({{{"name", "all"}, {"prefix", "/"}, {"backend", "demo"}}})},
  };
}

SluiceProcess::SluiceProcess(const nlohmann::json& config) : SluiceProcess(config, Options{}) {}

SluiceProcess::SluiceProcess(const nlohmann::json& config, const Options& options)
    : config_path_(write_initial(directory_.path(), config)),
      options_(options),
      process_(
          std::make_unique<ChildProcess>(command(config_path_, options.extra_args), options.env)) {
  if (options.wait_ready) {
    wait_ready(options.ready_timeout);
  }
}

SluiceProcess::~SluiceProcess() {
  if (process_->send_signal(SIGTERM)) {
    process_->wait_exit(std::chrono::seconds(3));
  }  // ~ChildProcess SIGKILLs what is left, then ~TempDir removes the config
}

void SluiceProcess::wait_ready(std::chrono::milliseconds timeout) {
  std::string line;
  if (!process_->wait_for_line("ready proxy=", timeout, &line)) {
    const auto code = process_->running() ? std::string("still running")
                                          : "exited with " + std::to_string(*process_->wait_exit());
    throw std::runtime_error("sluice did not log `ready proxy=` within " +
                             std::to_string(timeout.count()) + " ms (" + code + "); output:\n" +
                             process_->output());
  }
  const auto proxy = parse_port(field_value(line, "proxy"));
  const auto admin = parse_port(field_value(line, "admin"));
  if (!proxy || !admin) {
    throw std::runtime_error("sluice: cannot parse the ports of '" + line + "'");
  }
  proxy_port_ = *proxy;
  admin_port_ = *admin;
  // listeners=NAME@IP:PORT,NAME@IP:PORT...
  std::string_view listeners = field_value(line, "listeners");
  while (!listeners.empty()) {
    const auto comma = std::min(listeners.find(','), listeners.size());
    const std::string_view item = listeners.substr(0, comma);
    const auto at = item.find('@');
    const auto port = at == std::string_view::npos ? std::nullopt : parse_port(item.substr(at + 1));
    if (!port) {
      throw std::runtime_error("sluice: cannot parse the listeners of '" + line + "'");
    }
    listener_ports_[std::string(item.substr(0, at))] = *port;
    listeners.remove_prefix(std::min(comma + 1, listeners.size()));
  }
  const auto threads = field_value(line, "threads");
  std::from_chars(threads.data(), threads.data() + threads.size(), threads_);  // 0 if absent
}

void SluiceProcess::rewrite_config(const nlohmann::json& config) {
  const auto temporary = directory_.path() / "sluice.json.next";
  write_file(temporary, config);
  std::filesystem::rename(temporary, config_path_);
}

void SluiceProcess::reload() {
  process_->send_signal(SIGHUP);
}

std::optional<int> SluiceProcess::terminate(std::chrono::milliseconds timeout) {
  process_->send_signal(SIGTERM);
  return process_->wait_exit(timeout);
}

void SluiceProcess::restart() {
  const auto code = terminate();
  if (code != 0) {
    throw std::runtime_error("sluice did not exit 0 before a restart; output:\n" +
                             process_->output());
  }
  process_ =
      std::make_unique<ChildProcess>(command(config_path_, options_.extra_args), options_.env);
  proxy_port_ = 0;
  admin_port_ = 0;
  wait_ready(options_.ready_timeout);
}

nlohmann::json SluiceProcess::read_config() const {
  std::ifstream in(config_path_);
  return nlohmann::json::parse(in);
}

}  // namespace sluice::testing
