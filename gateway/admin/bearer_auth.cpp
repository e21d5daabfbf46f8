// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/bearer_auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace sluice::admin {
namespace {

constexpr std::string_view kScheme = "bearer ";
constexpr std::size_t kActorDigits = 12;  // hex digits of the token's SHA-256 naming an actor

bool has_bearer_scheme(std::string_view header) {
  return header.size() >= kScheme.size() &&
         std::equal(kScheme.begin(), kScheme.end(), header.begin(), [](char a, char b) {
           return a == std::tolower(static_cast<unsigned char>(b));
         });
}

}  // namespace

BearerAuth::BearerAuth(const std::optional<std::string>& token) {
  if (token && !token->empty()) {
    digest_ = digest_of(*token);
    static constexpr std::string_view kHex = "0123456789abcdef";
    actor_.clear();
    for (std::size_t i = 0; i < kActorDigits / 2; ++i) {
      actor_ += kHex[(*digest_)[i] >> 4U];
      actor_ += kHex[(*digest_)[i] & 0x0FU];
    }
  }
}

BearerAuth::Digest BearerAuth::digest_of(std::string_view text) {
  Digest digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size != digest.size()) {
    throw std::runtime_error("SHA-256 failed");
  }
  return digest;
}

bool BearerAuth::allows(std::string_view authorization) const {
  if (!digest_) {
    return true;
  }
  if (!has_bearer_scheme(authorization)) {
    return false;
  }
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && authorization.front() == ' ') {
    authorization.remove_prefix(1);
  }
  const Digest presented = digest_of(authorization);
  return CRYPTO_memcmp(presented.data(), digest_->data(), presented.size()) == 0;
}

}  // namespace sluice::admin
