// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/backend_tls.hpp"

namespace sluice::app {

std::optional<std::string> BackendTls::load(const config::Config& config, bool reread) {
  Set next;
  if (auto error = build(config, reread, next)) {
    return error;
  }
  current_ = std::move(next);
  return std::nullopt;
}

std::optional<std::string> BackendTls::build(const config::Config& config, bool reread,
                                             Set& next) const {
  for (const auto& [name, backend] : config.backends) {
    if (!backend.speaks_tls()) {
      continue;
    }
    const auto it = current_.find(name);
    if (!reread && it != current_.end() && it->second->config() == *backend.tls) {
      next.emplace(name, it->second);
      continue;
    }
    std::string error;
    auto loaded = tls::ClientTls::load(*backend.tls, path(name), error);
    if (!loaded) {
      return error;
    }
    if (!backend.tls->verify) {
      log_->warn("backend={} tls.verify=false: its certificate is not checked", name);
    }
    next.emplace(name, std::move(loaded));
  }
  return std::nullopt;
}

}  // namespace sluice::app
