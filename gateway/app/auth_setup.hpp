// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <optional>
#include <string>

#include "gateway/auth/credential_slot.hpp"
#include "gateway/config/config.hpp"
#include "gateway/proxy/steps/auth_failure_ledger.hpp"

namespace sluice::app {

/// The credentials of each config version the gateway installs (docs/identity.md): the JWT
/// verifier (its policy, the HS256 secret from the environment, the keys of `jwks_file`) and
/// the API key table of `keys_file`, published in the slot every worker reads; and the failure
/// policy, given to the ledger. An unchanged section keeps what was read (admin changes never
/// re-read the files) unless the caller asks (SIGHUP). Keys from `jwks_url` are the
/// JwksRefresher's: a config change that keeps the URL keeps them. Confined to the control
/// thread.
class AuthSetup {
 public:
  AuthSetup(const config::Config& config, auth::CredentialSlot& slot,
            proxy::AuthFailureLedger& ledger, std::shared_ptr<spdlog::logger> log);

  /// Builds the credentials of `config` (the files again when `reread`) and publishes them; on
  /// a problem (the first is returned) what was in force stays.
  std::optional<std::string> load(const config::Config& config, bool reread);
  /// A dry run of load(): the first problem it would meet.
  [[nodiscard]] std::optional<std::string> check(const config::Config& config) const;
  /// Why the starting config's credentials could not be built, if they could not.
  [[nodiscard]] const std::optional<std::string>& startup_error() const noexcept {
    return startup_error_;
  }

  /// Installs a key set fetched from `jwks_url` (the JwksRefresher): the current policy with
  /// these keys.
  void set_jwks(std::shared_ptr<const auth::JwkSet> keys);
  /// The policy of the config in force, secrets resolved (null without `auth.jwt`).
  [[nodiscard]] const std::optional<config::JwtConfig>& jwt_config() const noexcept {
    return jwt_config_;
  }

  /// The verifier `jwt` asks for: its policy from the config and `keys` (`hs256_secret` from
  /// the environment). nullopt with `error` when the secret's variable is unset or empty.
  static std::shared_ptr<const auth::JwtVerifier> make_verifier(
      const config::JwtConfig& jwt, std::shared_ptr<const auth::JwkSet> keys, std::string& error);
  /// The key set of `jwks_file`; null with `error`. Keys it cannot use are logged to `log`.
  static std::shared_ptr<const auth::JwkSet> read_jwks_file(const std::string& path,
                                                            std::string& error,
                                                            spdlog::logger* log);
  /// The API key table of `keys_file`; null with `error`.
  static std::shared_ptr<const auth::ApiKeyTable> read_keys_file(const std::string& path,
                                                                 std::string& error);

  /// The table in force: the keys of `file` (may be null) and those of the config, a hash in
  /// both refused (null with `error`).
  static std::shared_ptr<const auth::ApiKeyTable> merge_keys(const auth::ApiKeyTable* file,
                                                             const config::ApiKeysConfig& config,
                                                             std::string& error);

 private:
  struct Built {
    std::shared_ptr<const auth::JwtVerifier> jwt;
    std::shared_ptr<const auth::ApiKeyTable> api_keys;
    std::shared_ptr<const auth::ApiKeyTable> file_keys;  ///< keys_file's alone
  };
  std::optional<std::string> build(const config::Config& config, bool reread, Built& out) const;

  auth::CredentialSlot& slot_;
  proxy::AuthFailureLedger& ledger_;
  std::shared_ptr<spdlog::logger> log_;
  std::optional<config::JwtConfig> jwt_config_;
  std::optional<config::ApiKeysConfig> api_keys_config_;
  std::shared_ptr<const auth::JwkSet> url_keys_;        ///< the last set fetched from jwks_url
  std::shared_ptr<const auth::ApiKeyTable> file_keys_;  ///< keys_file as last read
  std::optional<std::string> file_path_;                ///< which file that was
  std::optional<std::string> startup_error_;
};

}  // namespace sluice::app
