// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gateway/config/config.hpp"
#include "gateway/tls/client_tls.hpp"

namespace sluice::app {

/// The client TLS of the backends that speak TLS (docs/tls.md "Upstream TLS"), loaded from
/// their files for each config version the gateway installs. An unchanged `tls` object keeps
/// what was loaded (admin changes never touch the files) unless the caller asks to re-read
/// them (SIGHUP, POST /admin/tls/reload). Confined to the control thread.
class BackendTls {
 public:
  using Set = std::map<std::string, std::shared_ptr<const tls::ClientTls>, std::less<>>;

  /// Loads the set for `config` (the one the gateway starts with); a problem is kept in
  /// startup_error().
  BackendTls(const config::Config& config, std::shared_ptr<spdlog::logger> log)
      : log_(std::move(log)), startup_error_(load(config, true)) {}

  /// Loads the set for `config` (every file again when `reread`) and makes it current; on a
  /// problem (the first is returned) the current set stays.
  std::optional<std::string> load(const config::Config& config, bool reread);
  /// A dry run of load(): the first problem it would meet, with nothing changed.
  [[nodiscard]] std::optional<std::string> check(const config::Config& config, bool reread) const {
    Set ignored;
    return build(config, reread, ignored);
  }
  /// The set of the last successful load().
  [[nodiscard]] const Set& current() const noexcept { return current_; }
  /// Why the set for the starting config could not be loaded, if it could not.
  [[nodiscard]] const std::optional<std::string>& startup_error() const noexcept {
    return startup_error_;
  }

  /// The backend's config path of its `tls` object, for errors.
  [[nodiscard]] static std::string path(const std::string& backend) {
    return "backends." + backend + ".tls";
  }

 private:
  /// The set for `config` into `next`; the first problem, if any.
  std::optional<std::string> build(const config::Config& config, bool reread, Set& next) const;

  std::shared_ptr<spdlog::logger> log_;
  Set current_;
  std::optional<std::string> startup_error_;
};

}  // namespace sluice::app
