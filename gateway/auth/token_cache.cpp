// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/token_cache.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>

namespace sluice::auth {

TokenCache::TokenCache(TokenCacheLimits limits)
    : limits_(limits),
      sha256_(EVP_MD_fetch(nullptr, "SHA256", nullptr)),
      context_(EVP_MD_CTX_new()) {}

std::size_t TokenCache::DigestHash::operator()(const Digest& d) const noexcept {
  std::size_t h = 0;
  std::memcpy(&h, d.data(), sizeof h);  // SHA-256's bits are uniform already
  return h;
}

TokenCache::Digest TokenCache::digest(std::string_view token) {
  Digest out{};
  unsigned int size = 0;
  if (!sha256_ || !context_ || EVP_DigestInit_ex(context_.get(), sha256_.get(), nullptr) != 1 ||
      EVP_DigestUpdate(context_.get(), token.data(), token.size()) != 1 ||
      EVP_DigestFinal_ex(context_.get(), out.data(), &size) != 1) {
    EVP_Digest(token.data(), token.size(), out.data(), &size, EVP_sha256(), nullptr);
  }
  return out;
}

const Verification* TokenCache::valid(Entries& entries, const Digest& key,
                                      std::chrono::system_clock::time_point now) {
  const auto it = entries.find(key);
  if (it == entries.end()) {
    return nullptr;
  }
  if (now >= it->second.until) {
    entries.erase(it);
    return nullptr;
  }
  return &it->second.verification;
}

const Verification* TokenCache::find(std::string_view token,
                                     std::chrono::system_clock::time_point now) {
  const Digest key = digest(token);
  const Verification* found = valid(verified_, key, now);
  return found != nullptr ? found : valid(refused_, key, now);
}

void TokenCache::remember(std::string_view token, const Verification& verification,
                          std::chrono::system_clock::time_point now) {
  const bool verified = std::holds_alternative<VerifiedToken>(verification);
  auto until = now + limits_.refused_for;
  if (verified) {
    until = now + limits_.longest;
    if (const auto& exp = std::get<VerifiedToken>(verification).expires) {
      until = std::min(until, std::chrono::system_clock::time_point(std::chrono::seconds(*exp)));
    }
  } else if (const AuthFailure failure = std::get<AuthFailure>(verification);
             failure == AuthFailure::kUnknownKey || failure == AuthFailure::kNotYetValid) {
    return;
  }
  Entries& entries = verified ? verified_ : refused_;
  const std::size_t limit = verified ? limits_.verified : limits_.refused;
  if (until <= now || limit == 0) {
    return;
  }
  const Digest key = digest(token);
  (verified ? refused_ : verified_).erase(key);
  if (entries.size() >= limit && entries.find(key) == entries.end()) {
    entries.erase(entries.begin());
  }
  entries.insert_or_assign(key, Entry{verification, until});
}

}  // namespace sluice::auth
