// SPDX-License-Identifier: Apache-2.0
#pragma once

// What a worker already knows of a bearer token, so a repeated token costs no signature
// check: verified tokens until their `exp`, refused ones for a short while. Keyed by the
// token's SHA-256, so a cache hit is the same token, never a hash collision of a short key,
// and the cache holds no token.

#include <openssl/evp.h>

#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>

#include "gateway/auth/jwt_verifier.hpp"

namespace sluice::auth {

struct TokenCacheLimits {
  std::size_t verified = 10'000;         ///< verified tokens kept
  std::size_t refused = 1'000;           ///< refused tokens kept
  std::chrono::seconds refused_for{10};  ///< how long a refusal is remembered
  std::chrono::seconds longest{3600};    ///< the most a verified token is kept (no exp: this)
};

/// One worker's cache (not thread-safe). When full, an arbitrary entry makes room.
class TokenCache {
 public:
  explicit TokenCache(TokenCacheLimits limits = {});

  /// The verification remembered for `token`, or null (an entry past its time is dropped).
  [[nodiscard]] const Verification* find(std::string_view token,
                                         std::chrono::system_clock::time_point now);
  /// Remembers `verification` of `token`: a verified token until its `exp` (at most
  /// `longest`); a refusal for `refused_for`, except refusals that may turn into a success
  /// soon (`unknown_key`: a key-set refresh; `not_yet_valid`: time), which are not kept.
  void remember(std::string_view token, const Verification& verification,
                std::chrono::system_clock::time_point now);

  [[nodiscard]] std::size_t size() const noexcept { return verified_.size() + refused_.size(); }
  void clear() noexcept {
    verified_.clear();
    refused_.clear();
  }

 private:
  using Digest = std::array<unsigned char, 32>;
  struct DigestHash {
    std::size_t operator()(const Digest& d) const noexcept;
  };
  struct Entry {
    Verification verification;
    std::chrono::system_clock::time_point until;
  };

  /// Open addressing: a lookup touches one group of slots, not a chain of nodes.
  using Entries = boost::unordered_flat_map<Digest, Entry, DigestHash>;
  struct MdCtxFree {
    void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
  };
  struct MdFree {
    void operator()(EVP_MD* md) const noexcept { EVP_MD_free(md); }
  };

  /// SHA-256 with a digest fetched once and a context reused: no provider lookup per token.
  [[nodiscard]] Digest digest(std::string_view token);
  /// The entry for `key` in `entries` if still valid at `now` (an expired one is dropped).
  static const Verification* valid(Entries& entries, const Digest& key,
                                   std::chrono::system_clock::time_point now);

  TokenCacheLimits limits_;
  std::unique_ptr<EVP_MD, MdFree> sha256_;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> context_;
  Entries verified_;  ///< apart, so a flood of refused tokens never pushes verified ones out
  Entries refused_;
};

}  // namespace sluice::auth
