// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/auth_setup.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "gateway/auth/jws_algorithm.hpp"
#include "gateway/config/config_loader.hpp"

namespace sluice::app {

AuthSetup::AuthSetup(const config::Config& config, auth::CredentialSlot& slot,
                     proxy::AuthFailureLedger& ledger, std::shared_ptr<spdlog::logger> log)
    : slot_(slot), ledger_(ledger), log_(std::move(log)), startup_error_(load(config, true)) {}

std::shared_ptr<const auth::JwtVerifier> AuthSetup::make_verifier(
    const config::JwtConfig& jwt, std::shared_ptr<const auth::JwkSet> keys, std::string& error) {
  auth::JwtPolicy policy;
  for (const std::string& name : jwt.algorithms) {
    if (const auto algorithm = auth::jws_algorithm(name)) {
      policy.algorithms.push_back(*algorithm);  // validation admits known names only
    }
  }
  policy.issuer = jwt.issuer;
  policy.audiences = jwt.audiences;
  policy.user_claim = jwt.user_claim;
  policy.tier_claim = jwt.tier_claim;
  policy.leeway = jwt.leeway;
  if (jwt.hs256_secret_env) {
    const char* secret =
        std::getenv(jwt.hs256_secret_env->c_str());  // NOLINT(concurrency-mt-unsafe)
    if (secret == nullptr || *secret == '\0') {
      error = "auth.jwt.hs256_secret_env: the environment variable " + *jwt.hs256_secret_env +
              " is not set";
      return nullptr;
    }
    policy.hs256_secret = secret;
  }
  return std::make_shared<const auth::JwtVerifier>(std::move(policy), std::move(keys));
}

std::shared_ptr<const auth::JwkSet> AuthSetup::read_jwks_file(const std::string& path,
                                                              std::string& error,
                                                              spdlog::logger* log) {
  std::string text;
  if (auto problem = config::read_config_file(path, text)) {
    error = "auth.jwt.jwks_file: " + config::to_string(*problem);
    return nullptr;
  }
  std::vector<std::string> skipped;
  auto set = std::make_shared<auth::JwkSet>(auth::JwkSet::parse(text, error, skipped));
  if (!error.empty()) {
    error = "auth.jwt.jwks_file: " + path + ": " + error;
    return nullptr;
  }
  if (log != nullptr) {
    for (const std::string& why : skipped) {
      log->warn("jwks key skipped file={} reason={}", path, why);
    }
  }
  return set;
}

std::shared_ptr<const auth::ApiKeyTable> AuthSetup::read_keys_file(const std::string& path,
                                                                   std::string& error) {
  std::string text;
  if (auto problem = config::read_config_file(path, text)) {
    error = "auth.api_keys.keys_file: " + config::to_string(*problem);
    return nullptr;
  }
  auto table = auth::ApiKeyTable::parse(text, error);
  if (!table) {
    error = "auth.api_keys.keys_file: " + path + ": " + error;
    return nullptr;
  }
  return std::make_shared<const auth::ApiKeyTable>(std::move(*table));
}

std::optional<std::string> AuthSetup::build(const config::Config& config, bool reread,
                                            Built& out) const {
  const auto current = slot_.load();
  std::string error;
  if (const auto& jwt = config.auth.jwt) {
    if (!reread && jwt_config_ == jwt && current->jwt) {
      out.jwt = current->jwt;
    } else {
      std::shared_ptr<const auth::JwkSet> keys;
      if (jwt->jwks_file) {
        keys = read_jwks_file(*jwt->jwks_file, error, log_.get());
      } else if (jwt->jwks_url && jwt_config_ && jwt_config_->jwks_url == jwt->jwks_url &&
                 url_keys_) {
        keys = url_keys_;  // what the refresher fetched stays until it fetches again
      } else {
        keys = std::make_shared<const auth::JwkSet>();  // HS256 only, or the URL not read yet
      }
      if (!error.empty()) {
        return error;
      }
      out.jwt = make_verifier(*jwt, std::move(keys), error);
      if (!out.jwt) {
        return error;
      }
    }
  }
  if (const auto& api_keys = config.auth.api_keys) {
    if (!reread && api_keys_config_ == api_keys && current->api_keys) {
      out.api_keys = current->api_keys;
    } else {
      std::shared_ptr<const auth::ApiKeyTable> file = file_keys_;
      if (api_keys->keys_file && (reread || !file || file_path_ != api_keys->keys_file)) {
        file = read_keys_file(*api_keys->keys_file, error);
        if (!file) {
          return error;
        }
      }
      out.file_keys = api_keys->keys_file ? file : nullptr;
      out.api_keys = merge_keys(out.file_keys.get(), *api_keys, error);
      if (!out.api_keys) {
        return error;
      }
    }
  }
  return std::nullopt;
}

std::shared_ptr<const auth::ApiKeyTable> AuthSetup::merge_keys(const auth::ApiKeyTable* file,
                                                               const config::ApiKeysConfig& config,
                                                               std::string& error) {
  std::vector<auth::ApiKey> keys;
  if (file != nullptr) {
    keys = file->keys();
  }
  for (std::size_t i = 0; i < config.keys.size(); ++i) {
    const config::ApiKeyEntry& key = config.keys[i];
    if (std::any_of(keys.begin(), keys.end(),
                    [&](const auth::ApiKey& k) { return k.sha256 == key.sha256; })) {
      error = "auth.api_keys.keys[" + std::to_string(i) + "].sha256: the key is in keys_file too";
      return nullptr;
    }
    keys.push_back({key.sha256, key.user, key.tier});
  }
  return std::make_shared<const auth::ApiKeyTable>(std::move(keys));
}

std::optional<std::string> AuthSetup::load(const config::Config& config, bool reread) {
  Built built;
  if (auto error = build(config, reread, built)) {
    return error;
  }
  const auto current = slot_.load();
  if (built.jwt != current->jwt) {
    slot_.set_jwt(built.jwt);
  }
  if (built.api_keys != current->api_keys) {
    slot_.set_api_keys(built.api_keys);
    if (built.api_keys) {
      log_->info("api keys loaded file={} keys={}",
                 config.auth.api_keys->keys_file.value_or("(none)"), built.api_keys->keys().size());
    }
  }
  if (!config.auth.jwt || !config.auth.jwt->jwks_url ||
      (jwt_config_ && jwt_config_->jwks_url != config.auth.jwt->jwks_url)) {
    url_keys_.reset();
  }
  jwt_config_ = config.auth.jwt;
  if (!(api_keys_config_ == config.auth.api_keys) || reread) {
    file_keys_ = built.file_keys;
    file_path_ = config.auth.api_keys ? config.auth.api_keys->keys_file : std::nullopt;
  }
  api_keys_config_ = config.auth.api_keys;
  ledger_.configure(config.auth.failure_policy);
  return std::nullopt;
}

std::optional<std::string> AuthSetup::check(const config::Config& config) const {
  Built ignored;
  return build(config, false, ignored);
}

void AuthSetup::set_jwks(std::shared_ptr<const auth::JwkSet> keys) {
  if (!jwt_config_) {
    return;
  }
  std::string error;
  auto verifier = make_verifier(*jwt_config_, keys, error);
  if (!verifier) {
    log_->error("jwks not installed: {}", error);
    return;
  }
  url_keys_ = std::move(keys);
  slot_.set_jwt(std::move(verifier));
}

}  // namespace sluice::app
