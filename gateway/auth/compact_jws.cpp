// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/compact_jws.hpp"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

#include <array>
#include <memory>

#include "gateway/auth/base64url.hpp"

namespace sluice::auth {
namespace {

using nlohmann::json;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* sig) const { ECDSA_SIG_free(sig); }
};

/// A base64url part holding a JSON object, or a discarded json.
json object_part(std::string_view part) {
  const auto bytes = decode_base64url(part);
  if (!bytes) {
    return json(json::value_t::discarded);
  }
  json value = json::parse(*bytes, nullptr, false);
  return value.is_object() ? value : json(json::value_t::discarded);
}

/// The DER ECDSA-Sig-Value OpenSSL verifies, from JWS's fixed-size `r || s` (RFC 7518 §3.4);
/// empty when `raw` does not have the curve's size.
std::string der_from_raw(std::string_view raw, std::size_t half) {
  if (raw.size() != 2 * half) {
    return {};
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  const std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(bytes, static_cast<int>(half), nullptr);
  BIGNUM* s = BN_bin2bn(bytes + half, static_cast<int>(half), nullptr);
  if (!sig || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return {};
  }
  const int size = i2d_ECDSA_SIG(sig.get(), nullptr);
  std::string der(static_cast<std::size_t>(std::max(size, 0)), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  if (size <= 0 || i2d_ECDSA_SIG(sig.get(), &out) != size) {
    return {};
  }
  return der;
}

}  // namespace

std::optional<CompactJws> read_compact_jws(std::string_view token, JwsError& error) {
  error = JwsError::kMalformed;
  const std::size_t first = token.find('.');
  const std::size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  const json header = object_part(token.substr(0, first));
  const json claims = object_part(token.substr(first + 1, second - first - 1));
  auto signature = decode_base64url(token.substr(second + 1));
  if (header.is_discarded() || claims.is_discarded() || !signature || header.contains("crit")) {
    return std::nullopt;
  }
  const auto alg = header.find("alg");
  if (alg == header.end() || !alg->is_string()) {
    return std::nullopt;
  }
  const auto algorithm = jws_algorithm(alg->get_ref<const std::string&>());
  if (!algorithm) {
    error = JwsError::kAlgorithmNotAllowed;
    return std::nullopt;
  }
  const auto kid = header.find("kid");
  if (kid != header.end() && !kid->is_string()) {
    return std::nullopt;
  }
  CompactJws jws;
  jws.algorithm = *algorithm;
  jws.kid = kid == header.end() ? "" : kid->get<std::string>();
  jws.claims = claims;
  jws.signing_input = std::string(token.substr(0, second));
  jws.signature = std::move(*signature);
  return jws;
}

bool verify_signature(const CompactJws& jws, EVP_PKEY* key) {
  const EVP_MD* digest = nullptr;
  std::string signature = jws.signature;
  switch (jws.algorithm) {
    case JwsAlgorithm::kES256:
      digest = EVP_sha256();
      signature = der_from_raw(jws.signature, 32);
      break;
    case JwsAlgorithm::kES384:
      digest = EVP_sha384();
      signature = der_from_raw(jws.signature, 48);
      break;
    case JwsAlgorithm::kRS256:
    case JwsAlgorithm::kPS256:
      digest = EVP_sha256();
      break;
    case JwsAlgorithm::kEdDSA:
      break;  // Ed25519 hashes inside: no digest
    case JwsAlgorithm::kHS256:
      return false;
  }
  if (signature.empty() || key == nullptr) {
    return false;
  }
  const std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), &pctx, digest, nullptr, key) != 1) {
    return false;
  }
  if (jws.algorithm == JwsAlgorithm::kRS256 || jws.algorithm == JwsAlgorithm::kPS256) {
    const bool pss = jws.algorithm == JwsAlgorithm::kPS256;
    if (EVP_PKEY_CTX_set_rsa_padding(pctx, pss ? RSA_PKCS1_PSS_PADDING : RSA_PKCS1_PADDING) != 1 ||
        (pss && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1)) {
      return false;
    }
  }
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(),
                          reinterpret_cast<const unsigned char*>(jws.signing_input.data()),
                          jws.signing_input.size()) == 1;
}

bool verify_hs256(const CompactJws& jws, std::string_view secret) {
  if (jws.algorithm != JwsAlgorithm::kHS256 || jws.signature.size() != 32 || secret.empty()) {
    return false;
  }
  std::array<unsigned char, 32> mac{};
  std::size_t size = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
                reinterpret_cast<const unsigned char*>(jws.signing_input.data()),
                jws.signing_input.size(), mac.data(), mac.size(), &size) == nullptr ||
      size != mac.size()) {
    return false;
  }
  return CRYPTO_memcmp(mac.data(), jws.signature.data(), mac.size()) == 0;
}

}  // namespace sluice::auth
