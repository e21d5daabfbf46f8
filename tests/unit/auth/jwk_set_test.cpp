// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/jwk_set.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gateway/auth/base64url.hpp"
#include "tests/unit/auth/jws_vectors.hpp"

namespace sluice::auth {
namespace {

using nlohmann::json;

JwkSet parse(const json& document, std::vector<std::string>& skipped) {
  std::string error;
  auto set = JwkSet::parse(document.dump(), error, skipped);
  EXPECT_EQ(error, "");
  return set;
}

json vector_key(const std::string& kid) {
  const json document = json::parse(vectors::kJwks);
  for (const auto& key : document["keys"]) {
    if (key["kid"] == kid) {
      return key;
    }
  }
  ADD_FAILURE() << kid;
  return {};
}

TEST(JwkSetTest, ReadsEcRsaAndEd25519KeysWithWhatEachMayVerify) {
  std::string error;
  std::vector<std::string> skipped;
  const auto set = JwkSet::parse(vectors::kJwks, error, skipped);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(skipped.empty()) << skipped.front();
  ASSERT_EQ(set.size(), 4U);
  EXPECT_EQ(set.find("ec256")->algorithms, std::vector{JwsAlgorithm::kES256});
  EXPECT_EQ(set.find("ec384")->algorithms, std::vector{JwsAlgorithm::kES384});
  EXPECT_EQ(set.find("rsa")->algorithms, (std::vector{JwsAlgorithm::kRS256, JwsAlgorithm::kPS256}));
  EXPECT_EQ(set.find("ed")->algorithms, std::vector{JwsAlgorithm::kEdDSA});
  for (const auto& key : set.keys()) {
    EXPECT_FALSE(key.allows(JwsAlgorithm::kHS256)) << key.kid;  // never a secret from a JWKS
  }
  EXPECT_EQ(set.find("other"), nullptr);
  EXPECT_EQ(set.find(""), nullptr);  // no kid, and more than one key: none
}

TEST(JwkSetTest, AKeysAlgNarrowsItAndAnAlgThatDoesNotFitLeavesTheKeyOut) {
  json rsa = vector_key("rsa");
  rsa["alg"] = "PS256";
  json ec = vector_key("ec256");
  ec["alg"] = "ES384";  // a P-256 key cannot
  json ed = vector_key("ed");
  ed["alg"] = "HS256";
  std::vector<std::string> skipped;
  const auto set = parse({{"keys", {rsa, ec, ed}}}, skipped);
  ASSERT_EQ(set.size(), 1U);
  EXPECT_EQ(set.find("rsa")->algorithms, std::vector{JwsAlgorithm::kPS256});
  ASSERT_EQ(skipped.size(), 2U);
  EXPECT_NE(skipped[0].find("kid ec256"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("does not fit"), std::string::npos) << skipped[1];
}

TEST(JwkSetTest, LeavesOutKeysItCannotVerifyWithAndSaysWhy) {
  json small_rsa = {{"kty", "RSA"},
                    {"kid", "small"},
                    {"n", encode_base64url(std::string(1, '\xc1') + std::string(127, '\x35'))},
                    {"e", "AQAB"}};
  json off_curve = vector_key("ec256");
  off_curve["kid"] = "off";
  off_curve["y"] = encode_base64url(std::string(32, '\x01'));
  json short_x = vector_key("ec256");
  short_x["kid"] = "short";
  short_x["x"] = encode_base64url(std::string(31, '\x01'));
  json encryption = vector_key("ed");
  encryption["kid"] = "enc";
  encryption["use"] = "enc";
  json duplicate = vector_key("ed");
  const json keys = {small_rsa,
                     off_curve,
                     short_x,
                     encryption,
                     {{"kty", "oct"}, {"k", "c2VjcmV0"}},
                     {{"kty", "OKP"}, {"crv", "X25519"}},
                     {{"kty", "RSA"}, {"n", "+++"}, {"e", "AQAB"}},
                     "text",
                     {{"kty", true}, {"crv", 256}},  // fuzz: kty_that_is_not_a_string
                     vector_key("ed"),
                     duplicate};
  std::vector<std::string> skipped;
  const auto set = parse({{"keys", keys}}, skipped);
  ASSERT_EQ(set.size(), 1U);
  EXPECT_NE(set.find("ed"), nullptr);
  EXPECT_EQ(set.find(""), set.find("ed"));  // the only key serves a token without kid
  ASSERT_EQ(skipped.size(), 10U);
  EXPECT_NE(skipped[0].find("1024 bits"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("kid off"), std::string::npos) << skipped[1];
  EXPECT_NE(skipped[2].find("32 bytes"), std::string::npos) << skipped[2];
  EXPECT_NE(skipped[3].find("use"), std::string::npos) << skipped[3];
  EXPECT_NE(skipped[4].find("kty oct"), std::string::npos) << skipped[4];
  EXPECT_NE(skipped[5].find("X25519"), std::string::npos) << skipped[5];
  EXPECT_NE(skipped[6].find("n and e"), std::string::npos) << skipped[6];
  EXPECT_NE(skipped[7].find("not an object"), std::string::npos) << skipped[7];
  EXPECT_NE(skipped[8].find("kty true crv 256"), std::string::npos) << skipped[8];
  EXPECT_NE(skipped[9].find("second key"), std::string::npos) << skipped[9];
}

TEST(JwkSetTest, ADocumentThatIsNotAKeySetIsAnError) {
  for (const char* text : {"", "[]", "{\"keys\": {}}", "{\"kty\": \"RSA\"}", "{\"keys\": [}"}) {
    std::string error;
    std::vector<std::string> skipped;
    const auto set = JwkSet::parse(text, error, skipped);
    EXPECT_NE(error, "") << text;
    EXPECT_EQ(set.size(), 0U);
  }
}

}  // namespace
}  // namespace sluice::auth
