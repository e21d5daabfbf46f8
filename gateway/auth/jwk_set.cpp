// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/jwk_set.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "gateway/auth/base64url.hpp"

namespace sluice::auth {
namespace {

using nlohmann::json;

constexpr int kMinimumRsaBits = 2048;

struct BnFree {
  void operator()(BIGNUM* bn) const { BN_free(bn); }
};
struct ParamBuildFree {
  void operator()(OSSL_PARAM_BLD* bld) const { OSSL_PARAM_BLD_free(bld); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* params) const { OSSL_PARAM_free(params); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};

std::shared_ptr<EVP_PKEY> owned(EVP_PKEY* key) {
  return key == nullptr ? nullptr : std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
}

/// A member as text: a string as it is, anything else as JSON ("" when absent), so a member of
/// the wrong type is named in the reason, never thrown on.
std::string text_member(const json& jwk, const char* name) {
  const auto it = jwk.find(name);
  if (it == jwk.end()) {
    return "";
  }
  return it->is_string() ? it->get<std::string>() : it->dump();
}

/// A member that must be a base64url string; nullopt when absent or not one.
std::optional<std::string> bytes_member(const json& jwk, const char* name) {
  const auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string()) {
    return std::nullopt;
  }
  return decode_base64url(it->get_ref<const std::string&>());
}

/// A public key of type `type` ("RSA", "EC") from `bld`'s parameters.
std::shared_ptr<EVP_PKEY> from_params(const char* type, OSSL_PARAM_BLD* bld) {
  const std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld));
  const std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return nullptr;
  }
  return owned(key);
}

std::shared_ptr<EVP_PKEY> rsa_key(const json& jwk, std::string& why) {
  const auto n = bytes_member(jwk, "n");
  const auto e = bytes_member(jwk, "e");
  if (!n || !e || n->empty() || e->empty()) {
    why = "an RSA key needs base64url members n and e";
    return nullptr;
  }
  const auto big = [](const std::string& b) {
    return std::unique_ptr<BIGNUM, BnFree>(BN_bin2bn(
        reinterpret_cast<const unsigned char*>(b.data()), static_cast<int>(b.size()), nullptr));
  };
  const auto bn_n = big(*n);
  const auto bn_e = big(*e);
  const std::unique_ptr<OSSL_PARAM_BLD, ParamBuildFree> bld(OSSL_PARAM_BLD_new());
  if (!bn_n || !bn_e || !bld ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1) {
    why = "OpenSSL could not hold the RSA key";
    return nullptr;
  }
  auto key = from_params("RSA", bld.get());
  if (!key) {
    why = "OpenSSL refused the RSA key";
  } else if (EVP_PKEY_get_bits(key.get()) < kMinimumRsaBits) {
    why = "an RSA key of " + std::to_string(EVP_PKEY_get_bits(key.get())) +
          " bits (at least 2048 are required)";
    key.reset();
  }
  return key;
}

std::shared_ptr<EVP_PKEY> ec_key(const json& jwk, const std::string& crv, std::string& why) {
  const std::size_t size = crv == "P-256" ? 32 : 48;
  const auto x = bytes_member(jwk, "x");
  const auto y = bytes_member(jwk, "y");
  if (!x || !y || x->size() != size || y->size() != size) {
    why = "an EC " + crv + " key needs base64url members x and y of " + std::to_string(size) +
          " bytes each";
    return nullptr;
  }
  std::string point = "\x04" + *x + *y;  // the uncompressed point (SEC 1 §2.3.3)
  const std::unique_ptr<OSSL_PARAM_BLD, ParamBuildFree> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME,
                                      crv == "P-256" ? "prime256v1" : "secp384r1", 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    why = "OpenSSL could not hold the EC key";
    return nullptr;
  }
  auto key = from_params("EC", bld.get());
  if (!key) {
    why = "OpenSSL refused the EC key (a point not on the curve?)";
  }
  return key;
}

std::shared_ptr<EVP_PKEY> ed25519_key(const json& jwk, std::string& why) {
  const auto x = bytes_member(jwk, "x");
  if (!x || x->size() != 32) {
    why = "an Ed25519 key needs a base64url member x of 32 bytes";
    return nullptr;
  }
  auto key = owned(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x->data()), x->size()));
  if (!key) {
    why = "OpenSSL refused the Ed25519 key";
  }
  return key;
}

/// The key and what its type allows; the key is null (and `why` says why) when it is unusable.
VerificationKey read_key(const json& jwk, std::string& why) {
  VerificationKey out;
  const std::string kty = text_member(jwk, "kty");
  const std::string crv = text_member(jwk, "crv");
  if (kty == "RSA") {
    out.key = rsa_key(jwk, why);
    out.algorithms = {JwsAlgorithm::kRS256, JwsAlgorithm::kPS256};
  } else if (kty == "EC" && (crv == "P-256" || crv == "P-384")) {
    out.key = ec_key(jwk, crv, why);
    out.algorithms = {crv == "P-256" ? JwsAlgorithm::kES256 : JwsAlgorithm::kES384};
  } else if (kty == "OKP" && crv == "Ed25519") {
    out.key = ed25519_key(jwk, why);
    out.algorithms = {JwsAlgorithm::kEdDSA};
  } else {
    why = "kty " + kty + (crv.empty() ? "" : " crv " + crv) + " is not one sluice verifies with";
  }
  return out;
}

}  // namespace

bool VerificationKey::allows(JwsAlgorithm algorithm) const {
  return std::find(algorithms.begin(), algorithms.end(), algorithm) != algorithms.end();
}

JwkSet JwkSet::parse(std::string_view text, std::string& error, std::vector<std::string>& skipped) {
  JwkSet set;
  const json document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object() || !document.contains("keys") ||
      !document["keys"].is_array()) {
    error = "not a JSON Web Key Set: an object with an array \"keys\" was expected";
    return set;
  }
  const json& keys = document["keys"];
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const json& jwk = keys[i];
    const std::string at = "keys[" + std::to_string(i) + "]";
    if (!jwk.is_object()) {
      skipped.push_back(at + ": not an object");
      continue;
    }
    const std::string kid =
        jwk.contains("kid") && jwk["kid"].is_string() ? jwk["kid"].get<std::string>() : "";
    const std::string label = at + (kid.empty() ? "" : " (kid " + kid + ")");
    if (jwk.contains("use") && jwk["use"] != "sig") {
      skipped.push_back(label + ": use is not \"sig\"");
      continue;
    }
    std::string why;
    VerificationKey key = read_key(jwk, why);
    if (!key.key) {
      skipped.push_back(label + ": " + why);
      continue;
    }
    if (jwk.contains("alg")) {
      const auto alg =
          jwk["alg"].is_string() ? jws_algorithm(jwk["alg"].get<std::string>()) : std::nullopt;
      if (!alg || !key.allows(*alg)) {
        skipped.push_back(label + ": alg " + jwk["alg"].dump() + " does not fit the key");
        continue;
      }
      key.algorithms = {*alg};
    }
    if (set.find(kid) != nullptr && !kid.empty()) {
      skipped.push_back(label + ": a second key with this kid");
      continue;
    }
    key.kid = kid;
    set.keys_.push_back(std::move(key));
  }
  return set;
}

const VerificationKey* JwkSet::find(std::string_view kid) const {
  if (kid.empty()) {
    return keys_.size() == 1 ? &keys_.front() : nullptr;
  }
  for (const auto& key : keys_) {
    if (key.kid == kid) {
      return &key;
    }
  }
  return nullptr;
}

}  // namespace sluice::auth
