// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/compact_jws.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "gateway/auth/base64url.hpp"
#include "gateway/auth/jwk_set.hpp"
#include "tests/unit/auth/jws_vectors.hpp"

namespace sluice::auth {
namespace {

using nlohmann::json;

class CompactJwsTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    std::vector<std::string> skipped;
    keys_ = JwkSet::parse(vectors::kJwks, error, skipped);
    ASSERT_EQ(keys_.size(), 4U) << error;
  }

  static CompactJws read(const std::string& token) {
    JwsError error{};
    auto jws = read_compact_jws(token, error);
    EXPECT_TRUE(jws) << token;
    return jws ? *jws : CompactJws{};
  }

  /// What a key-set check says of `token`: its key by kid, allowed for its alg, signature.
  bool verifies(const std::string& token) const {
    const CompactJws jws = read(token);
    const VerificationKey* key = keys_.find(jws.kid);
    return key != nullptr && key->allows(jws.algorithm) && verify_signature(jws, key->key.get());
  }

  /// The three parts of `token`.
  static std::vector<std::string> parts(const std::string& token) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t dot = token.find('.'); dot != std::string::npos;
         start = dot + 1, dot = token.find('.', start)) {
      out.push_back(token.substr(start, dot - start));
    }
    out.push_back(token.substr(start));
    return out;
  }

  /// `token` with its part `index` replaced.
  static std::string with_part(const std::string& token, std::size_t index,
                               const std::string& part) {
    auto p = parts(token);
    p.at(index) = part;
    return p[0] + "." + p[1] + "." + p[2];
  }

  JwkSet keys_;
};

TEST_F(CompactJwsTest, EveryAlgorithmSignedByAnIndependentSignerVerifies) {
  for (const char* token :
       {vectors::kES256, vectors::kES384, vectors::kRS256, vectors::kPS256, vectors::kEdDSA}) {
    EXPECT_TRUE(verifies(token)) << token;
  }
  const CompactJws jws = read(vectors::kES256);
  EXPECT_EQ(jws.algorithm, JwsAlgorithm::kES256);
  EXPECT_EQ(jws.kid, "ec256");
  EXPECT_EQ(jws.claims["sub"], "alice");
  EXPECT_EQ(jws.claims["plan"], "gold");
}

TEST_F(CompactJwsTest, AChangedClaimOrSignatureFails) {
  const json forged_claims = {{"sub", "mallory"}, {"exp", 4102444800}};
  for (const char* token :
       {vectors::kES256, vectors::kES384, vectors::kRS256, vectors::kPS256, vectors::kEdDSA}) {
    EXPECT_FALSE(verifies(with_part(token, 1, encode_base64url(forged_claims.dump())))) << token;
    std::string signature = *decode_base64url(parts(token)[2]);
    signature[signature.size() / 2] ^= 0x01;
    EXPECT_FALSE(verifies(with_part(token, 2, encode_base64url(signature)))) << token;
  }
}

TEST_F(CompactJwsTest, ASignatureOfTheWrongSizeOrSchemeFails) {
  // PS256's signature presented as RS256 (same key, other padding).
  const CompactJws rs = read(vectors::kRS256);
  CompactJws swapped = read(vectors::kPS256);
  swapped.algorithm = JwsAlgorithm::kRS256;
  EXPECT_FALSE(verify_signature(swapped, keys_.find("rsa")->key.get()));
  CompactJws truncated = read(vectors::kES256);
  truncated.signature.pop_back();
  EXPECT_FALSE(verify_signature(truncated, keys_.find("ec256")->key.get()));
  // An ES256 token checked against the P-384 key.
  EXPECT_FALSE(verify_signature(read(vectors::kES256), keys_.find("ec384")->key.get()));
  EXPECT_TRUE(verify_signature(rs, keys_.find("rsa")->key.get()));
}

TEST_F(CompactJwsTest, Hs256VerifiesOnlyWithItsSecretAndNeverWithAKeyOfTheSet) {
  const CompactJws jws = read(vectors::kHS256);
  EXPECT_EQ(jws.algorithm, JwsAlgorithm::kHS256);
  EXPECT_TRUE(verify_hs256(jws, vectors::kHs256Secret));
  EXPECT_FALSE(verify_hs256(jws, "another secret of at least thirty-two bytes"));
  EXPECT_FALSE(verify_hs256(jws, ""));
  EXPECT_FALSE(verify_signature(jws, keys_.find("rsa")->key.get()));
  EXPECT_FALSE(verify_hs256(read(vectors::kES256), vectors::kHs256Secret));
}

TEST_F(CompactJwsTest, TheRsaToHmacKeyConfusionIsRefused) {
  // RS256 -> HS256: a token whose HMAC key is the RSA public key's bytes, with the RSA key's
  // kid. The key set hands out the RSA key, which does not allow HS256: refused before any
  // signature check; and verify_signature never does HMAC.
  const json header = {{"alg", "HS256"}, {"kid", "rsa"}};
  const auto jwks = json::parse(vectors::kJwks);
  std::string public_key_bytes;
  for (const auto& k : jwks["keys"]) {
    if (k["kid"] == "rsa") {
      public_key_bytes = *decode_base64url(k["n"].get<std::string>());
    }
  }
  const std::string signing_input =
      encode_base64url(header.dump()) + "." + parts(vectors::kRS256)[1];
  // Signed as an attacker would: HMAC keyed with what the server knows as the public key.
  std::array<unsigned char, 32> mac{};
  std::size_t size = 0;
  ASSERT_NE(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, public_key_bytes.data(),
                      public_key_bytes.size(),
                      reinterpret_cast<const unsigned char*>(signing_input.data()),
                      signing_input.size(), mac.data(), mac.size(), &size),
            nullptr);
  const std::string token =
      signing_input + "." +
      encode_base64url(std::string(reinterpret_cast<char*>(mac.data()), size));
  EXPECT_TRUE(verify_hs256(read(token), public_key_bytes));  // what a confused verifier would do
  const CompactJws jws = read(token);
  const VerificationKey* key = keys_.find(jws.kid);
  ASSERT_NE(key, nullptr);
  EXPECT_FALSE(key->allows(jws.algorithm));
  EXPECT_FALSE(verify_signature(jws, key->key.get()));
}

TEST_F(CompactJwsTest, NoneAndUnlistedAlgorithmsAreRefusedByName) {
  for (const char* alg : {"none", "None", "HS512", "RS512", "ES512", "es256", "", "Ed25519"}) {
    const json header = {{"alg", alg}};
    const std::string token =
        encode_base64url(header.dump()) + "." + encode_base64url(R"({"sub":"x"})") + ".";
    JwsError error{};
    EXPECT_FALSE(read_compact_jws(token, error)) << alg;
    EXPECT_EQ(error, JwsError::kAlgorithmNotAllowed) << alg;
  }
}

TEST_F(CompactJwsTest, WhatIsNotACompactJwsIsMalformed) {
  const std::string header = encode_base64url(R"({"alg":"ES256"})");
  const std::string claims = encode_base64url(R"({"sub":"x"})");
  const std::string signature = encode_base64url("sig");
  const std::vector<std::string> tokens = {
      "",
      "abc",
      header + "." + claims,
      header + "." + claims + "." + signature + "." + signature,  // five parts: JWE
      header + "=." + claims + "." + signature,
      header + "." + claims + "." + signature + "=",
      encode_base64url("[1]") + "." + claims + "." + signature,
      header + "." + encode_base64url("\"text\"") + "." + signature,
      header + "." + encode_base64url("{") + "." + signature,
      encode_base64url(R"({"alg":"ES256","crit":["exp"]})") + "." + claims + "." + signature,
      encode_base64url(R"({"alg":256})") + "." + claims + "." + signature,
      encode_base64url(R"({"alg":"ES256","kid":7})") + "." + claims + "." + signature,
  };
  for (const auto& token : tokens) {
    JwsError error{};
    EXPECT_FALSE(read_compact_jws(token, error)) << token;
    EXPECT_EQ(error, JwsError::kMalformed) << token;
  }
}

}  // namespace
}  // namespace sluice::auth
