// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/user_hash.hpp"

#include <cstdlib>
#include <string_view>

namespace sluice::log {

std::optional<core::KeyedHash> user_hash_from_env(const config::AccessLogConfig& config,
                                                  std::string& error) {
  error.clear();
  if (!config.user_hash_key_env) {
    return std::nullopt;
  }
  const std::string& name = *config.user_hash_key_env;
  const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): before threads
  if (value == nullptr || *value == '\0') {
    error = "access_log.user_hash_key_env names " + name +
            ", which is not set: user hashes would not agree across replicas";
    return std::nullopt;
  }
  const std::string_view secret(value);
  if (secret.size() < kMinUserHashSecret) {
    error = "access_log.user_hash_key_env: " + name + " holds " + std::to_string(secret.size()) +
            " bytes; a secret needs at least " + std::to_string(kMinUserHashSecret);
    return std::nullopt;
  }
  return core::KeyedHash::from_secret(secret);
}

std::array<char, 12> user_label(std::uint64_t hash) noexcept {
  static constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::array<char, 12> out{};
  for (std::size_t i = out.size(); i-- > 0; hash >>= 4U) {
    out[i] = kHex[hash & 0xfU];
  }
  return out;
}

}  // namespace sluice::log
