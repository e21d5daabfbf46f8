// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/check_command.hpp"

#include <chrono>
#include <ostream>
#include <string>

#include "gateway/app/auth_setup.hpp"
#include "gateway/app/backend_tls.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/tls/server_tls.hpp"

namespace sluice::app {

namespace {

constexpr auto kExpiryWarning = std::chrono::hours(24 * 14);

/// Loads every TLS listener's certificates as the gateway would at start (docs/tls.md): an
/// error per listener that cannot serve, a warning per certificate that expires within 14 days.
/// Returns whether every listener can serve.
bool check_certificates(const config::Config& config, std::ostream& err) {
  bool ok = true;
  const auto now = std::chrono::system_clock::now();
  for (std::size_t i = 0; i < config.listeners.size(); ++i) {
    if (!config.listeners[i].tls) {
      continue;
    }
    const std::string path = "listeners[" + std::to_string(i) + "].tls";
    std::string error;
    const auto served = tls::ServerTls::load(*config.listeners[i].tls, path,
                                             std::make_shared<tls::TicketKeys>(), error);
    if (!served) {
      err << error << '\n';
      ok = false;
      continue;
    }
    for (std::size_t c = 0; c < served->certificates().size(); ++c) {
      const auto left = served->certificates()[c].not_after - now;
      if (left < kExpiryWarning) {
        const auto days = std::chrono::duration_cast<std::chrono::hours>(left).count() / 24;
        err << "warning: " << path << ".certificates[" << c
            << "].cert: " << config.listeners[i].tls->certificates[c].cert << " expires in " << days
            << " days\n";
      }
    }
  }
  return ok;
}

}  // namespace

/// Reads the key set, the API keys and the HS256 secret as an install would (docs/identity.md).
bool check_auth_files(const config::Config& config, std::ostream& err) {
  std::string error;
  if (const auto& jwt = config.auth.jwt) {
    if (jwt->jwks_file && !AuthSetup::read_jwks_file(*jwt->jwks_file, error, nullptr)) {
      err << error << '\n';
      return false;
    }
    if (!AuthSetup::make_verifier(*jwt, std::make_shared<const auth::JwkSet>(), error)) {
      err << error << '\n';
      return false;
    }
  }
  if (const auto& keys = config.auth.api_keys) {
    std::shared_ptr<const auth::ApiKeyTable> file;
    if (keys->keys_file && !(file = AuthSetup::read_keys_file(*keys->keys_file, error))) {
      err << error << '\n';
      return false;
    }
    if (!AuthSetup::merge_keys(file.get(), *keys, error)) {
      err << error << '\n';
      return false;
    }
  }
  return true;
}

/// Loads every TLS backend's CA, client certificate and key as an install would.
bool check_backend_tls(const config::Config& config, std::ostream& err) {
  bool ok = true;
  for (const auto& [name, backend] : config.backends) {
    std::string error;
    if (backend.speaks_tls() &&
        !tls::ClientTls::load(*backend.tls, BackendTls::path(name), error)) {
      err << error << '\n';
      ok = false;
    }
  }
  return ok;
}

int run_check(const CommandLine& command_line, std::ostream& out, std::ostream& err) {
  const config::LoadResult result = config::load_config_file(command_line.config_path);
  if (result.ok()) {
    const bool listeners_ok = check_certificates(*result.config, err);
    const bool auth_ok = check_auth_files(*result.config, err);
    if (!check_backend_tls(*result.config, err) || !listeners_ok || !auth_ok) {
      return 1;
    }
    out << "config ok\n";
    return 0;
  }
  for (const config::Problem& problem : result.problems) {
    err << config::to_string(problem) << '\n';
  }
  return 1;
}

}  // namespace sluice::app
