// SPDX-License-Identifier: Apache-2.0
#pragma once

// API keys as sluice keeps them (docs/identity.md "API keys"): the SHA-256 of each key, never
// the key, tied to a user and a tier. The table is immutable; a change makes a new one.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::auth {

/// One key: its SHA-256 (64 lower-case hex digits), the user it names and that user's tier
/// (empty: none).
struct ApiKey {
  std::string sha256;
  std::string user;
  std::string tier;

  bool operator==(const ApiKey&) const = default;
};

class ApiKeyTable {
 public:
  ApiKeyTable() = default;
  explicit ApiKeyTable(std::vector<ApiKey> keys);

  /// Reads a keys file: `{"keys": [{"sha256": HEX, "user": U, "tier": T}]}` (`tier` optional).
  /// nullopt with `error` set (naming the entry) when it is not one, or a hash repeats.
  static std::optional<ApiKeyTable> parse(std::string_view json, std::string& error);
  /// The document parse() reads, keys in the table's order.
  [[nodiscard]] std::string dump() const;

  /// The entry whose hash is the SHA-256 of `key` (the clear key a client sent), or null.
  [[nodiscard]] const ApiKey* find(std::string_view key) const;
  [[nodiscard]] const std::vector<ApiKey>& keys() const noexcept { return keys_; }

  /// This table with `user`'s keys replaced by one key, `key` in clear (hashed here).
  [[nodiscard]] ApiKeyTable with_key(std::string_view user, std::string_view key,
                                     std::string_view tier) const;
  /// This table without `user`'s keys; nullopt when it has none.
  [[nodiscard]] std::optional<ApiKeyTable> without_user(std::string_view user) const;

  /// The SHA-256 of `key` in lower-case hex.
  [[nodiscard]] static std::string sha256_hex(std::string_view key);

 private:
  using Digest = std::array<unsigned char, 32>;
  struct DigestHash {
    std::size_t operator()(const Digest& d) const noexcept;
  };

  std::vector<ApiKey> keys_;
  std::unordered_map<Digest, std::size_t, DigestHash> by_digest_;  ///< index into keys_
};

}  // namespace sluice::auth
