// SPDX-License-Identifier: Apache-2.0
// Bearer tokens, JSON Web Key Sets and API key files as gateway/auth reads them: base64url has
// one spelling per byte string; whatever a key set keeps can verify something and never HMAC; a
// token, verified against a fixed key set and secret, either names a user or says why not; a key
// file that reads writes back to the same keys.
#include <string>
#include <vector>

#include "gateway/auth/api_key_table.hpp"
#include "gateway/auth/base64url.hpp"
#include "gateway/auth/jwk_set.hpp"
#include "gateway/auth/jwt_verifier.hpp"
#include "gateway/auth/token_cache.hpp"
#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/unit/auth/vector_verifier.hpp"

namespace sluice::fuzz {
namespace {

const auth::JwtVerifier& vector_verifier() {
  static const auto verifier = auth::vectors::make_vector_verifier(false);
  return *verifier;
}

}  // namespace

int jose_token(Input input) {
  const std::string_view text = text_of(input);
  if (const auto bytes = auth::decode_base64url(text)) {
    SLUICE_FUZZ_CHECK(auth::encode_base64url(*bytes) == text);
  }
  std::string error;
  std::vector<std::string> skipped;
  const auto set = auth::JwkSet::parse(text, error, skipped);
  SLUICE_FUZZ_CHECK(error.empty() || set.size() == 0);
  for (const auto& key : set.keys()) {
    SLUICE_FUZZ_CHECK(key.key != nullptr && !key.algorithms.empty());
    SLUICE_FUZZ_CHECK(!key.allows(auth::JwsAlgorithm::kHS256));
  }
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const auth::Verification verification = vector_verifier().verify(text, now);
  if (const auto* token = std::get_if<auth::VerifiedToken>(&verification)) {
    SLUICE_FUZZ_CHECK(!token->user.empty());
  }
  if (const auto table = auth::ApiKeyTable::parse(text, error)) {
    const auto again = auth::ApiKeyTable::parse(table->dump(), error);
    SLUICE_FUZZ_CHECK(again && again->keys() == table->keys());
    SLUICE_FUZZ_CHECK(table->find(text) == nullptr || !table->keys().empty());
  }
  auth::TokenCache cache;
  cache.remember(text, verification, now);
  const auth::Verification* again = cache.find(text, now);
  SLUICE_FUZZ_CHECK(again == nullptr || again->index() == verification.index());
  return 0;
}

}  // namespace sluice::fuzz
