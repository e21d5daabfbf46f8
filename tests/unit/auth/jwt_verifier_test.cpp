// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/jwt_verifier.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <array>
#include <string>
#include <vector>

#include "gateway/auth/base64url.hpp"
#include "tests/unit/auth/jws_vectors.hpp"

namespace sluice::auth {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using std::chrono::system_clock;

// The vectors' exp is 2100-01-01T00:00:00Z.
constexpr std::int64_t kVectorExp = 4102444800;
const system_clock::time_point kNow{seconds(1'800'000'000)};
constexpr const char* kSecret = "a secret of at least thirty-two bytes, for claims";

std::shared_ptr<const JwkSet> vector_keys() {
  std::string error;
  std::vector<std::string> skipped;
  return std::make_shared<const JwkSet>(JwkSet::parse(vectors::kJwks, error, skipped));
}

JwtPolicy all_algorithms() {
  JwtPolicy policy;
  policy.algorithms = {JwsAlgorithm::kES256, JwsAlgorithm::kES384, JwsAlgorithm::kRS256,
                       JwsAlgorithm::kPS256, JwsAlgorithm::kEdDSA, JwsAlgorithm::kHS256};
  policy.issuer = "https://id.example.com/";
  policy.audiences = {"other", "api"};
  policy.tier_claim = "plan";
  policy.hs256_secret = kSecret;
  return policy;
}

/// An HS256 token over `claims` with kSecret (HMAC's math itself is checked against an
/// independent signer in compact_jws_test).
std::string hs256(const json& claims, const std::string& secret = kSecret) {
  const std::string input =
      encode_base64url(R"({"alg":"HS256","typ":"JWT"})") + "." + encode_base64url(claims.dump());
  std::array<unsigned char, 32> mac{};
  std::size_t size = 0;
  EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
            reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac.data(),
            mac.size(), &size);
  return input + "." + encode_base64url(std::string(reinterpret_cast<char*>(mac.data()), size));
}

json good_claims() {
  return {{"sub", "bob"},
          {"iss", "https://id.example.com/"},
          {"aud", "api"},
          {"exp", 1'800'000'600},
          {"plan", "silver"}};
}

AuthFailure failure(const Verification& v) {
  EXPECT_TRUE(std::holds_alternative<AuthFailure>(v));
  return std::holds_alternative<AuthFailure>(v) ? std::get<AuthFailure>(v) : AuthFailure::kMissing;
}

TEST(JwtVerifierTest, EveryAlgorithmGivesTheUserAndTierOfItsClaims) {
  const JwtVerifier verifier(all_algorithms(), vector_keys());
  for (const char* token :
       {vectors::kES256, vectors::kES384, vectors::kRS256, vectors::kPS256, vectors::kEdDSA}) {
    const auto v = verifier.verify(token, kNow);
    ASSERT_TRUE(std::holds_alternative<VerifiedToken>(v))
        << token << " " << reason_name(std::get<AuthFailure>(v));
    EXPECT_EQ(std::get<VerifiedToken>(v).user, "alice");
    EXPECT_EQ(std::get<VerifiedToken>(v).tier, "gold");
    EXPECT_EQ(std::get<VerifiedToken>(v).expires, kVectorExp);
  }
  JwtPolicy vector_secret = all_algorithms();
  vector_secret.hs256_secret = vectors::kHs256Secret;
  const JwtVerifier hs(vector_secret, nullptr);
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(hs.verify(vectors::kHS256, kNow)));
}

TEST(JwtVerifierTest, OnlyListedAlgorithmsAndHs256OnlyWithASecret) {
  JwtPolicy policy = all_algorithms();
  policy.algorithms = {JwsAlgorithm::kES256};
  const JwtVerifier verifier(policy, vector_keys());
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(verifier.verify(vectors::kES256, kNow)));
  EXPECT_EQ(failure(verifier.verify(vectors::kRS256, kNow)), AuthFailure::kAlgorithmNotAllowed);
  EXPECT_EQ(failure(verifier.verify(hs256(good_claims()), kNow)),
            AuthFailure::kAlgorithmNotAllowed);
  policy = all_algorithms();
  policy.hs256_secret.clear();
  EXPECT_EQ(failure(JwtVerifier(policy, vector_keys()).verify(hs256(good_claims()), kNow)),
            AuthFailure::kAlgorithmNotAllowed);
  const std::string none =
      encode_base64url(R"({"alg":"none"})") + "." + encode_base64url(good_claims().dump()) + ".";
  EXPECT_EQ(failure(JwtVerifier(all_algorithms(), vector_keys()).verify(none, kNow)),
            AuthFailure::kAlgorithmNotAllowed);
}

TEST(JwtVerifierTest, AKeyTheSetDoesNotHoldIsUnknownAndAForgeryIsABadSignature) {
  const JwtVerifier verifier(all_algorithms(), vector_keys());
  std::string token = vectors::kES256;
  const std::string other_kid = encode_base64url(R"({"alg":"ES256","kid":"gone"})");
  EXPECT_EQ(failure(verifier.verify(other_kid + token.substr(token.find('.')), kNow)),
            AuthFailure::kUnknownKey);
  EXPECT_EQ(failure(JwtVerifier(all_algorithms(), nullptr).verify(token, kNow)),
            AuthFailure::kUnknownKey);
  token[token.size() - 3] = token[token.size() - 3] == 'A' ? 'B' : 'A';
  EXPECT_EQ(failure(verifier.verify(token, kNow)), AuthFailure::kBadSignature);
  EXPECT_EQ(failure(verifier.verify(hs256(good_claims(), "not the secret at all, but long"), kNow)),
            AuthFailure::kBadSignature);
  EXPECT_EQ(failure(verifier.verify("not.a.token", kNow)), AuthFailure::kMalformed);
}

TEST(JwtVerifierTest, ExpAndNbfHoldWithTheLeeway) {
  const JwtVerifier verifier(all_algorithms(), vector_keys());  // leeway 30 s
  json claims = good_claims();
  claims["exp"] = 1'800'000'000 - 31;
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kExpired);
  claims["exp"] = 1'800'000'000 - 29;
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(verifier.verify(hs256(claims), kNow)));
  claims["nbf"] = 1'800'000'000 + 31;
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kNotYetValid);
  claims["nbf"] = 1'800'000'000 + 29;
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(verifier.verify(hs256(claims), kNow)));
  claims.erase("exp");  // a token without exp does not expire
  claims.erase("nbf");
  const auto v = verifier.verify(hs256(claims), kNow);
  ASSERT_TRUE(std::holds_alternative<VerifiedToken>(v));
  EXPECT_FALSE(std::get<VerifiedToken>(v).expires);
  claims["exp"] = "tomorrow";
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kMalformed);
}

TEST(JwtVerifierTest, IssuerAndAudienceMustMatchWhenConfigured) {
  const JwtVerifier verifier(all_algorithms(), vector_keys());
  json claims = good_claims();
  claims["iss"] = "https://evil.example.com/";
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kWrongIssuer);
  claims.erase("iss");
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kWrongIssuer);
  claims = good_claims();
  claims["aud"] = "web";
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kWrongAudience);
  claims["aud"] = json::array({"web", "api"});
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(verifier.verify(hs256(claims), kNow)));
  claims["aud"] = json::array({"web"});
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kWrongAudience);
  JwtPolicy open = all_algorithms();
  open.issuer.reset();
  open.audiences.clear();
  claims.erase("aud");
  claims["iss"] = "anyone";
  EXPECT_TRUE(std::holds_alternative<VerifiedToken>(
      JwtVerifier(open, vector_keys()).verify(hs256(claims), kNow)));
}

TEST(JwtVerifierTest, TheUserClaimMustNameSomeone) {
  JwtPolicy policy = all_algorithms();
  policy.user_claim = "uid";
  const JwtVerifier verifier(policy, vector_keys());
  json claims = good_claims();
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kMalformed);
  claims["uid"] = "";
  EXPECT_EQ(failure(verifier.verify(hs256(claims), kNow)), AuthFailure::kMalformed);
  claims["uid"] = 42;
  const auto v = verifier.verify(hs256(claims), kNow);
  ASSERT_TRUE(std::holds_alternative<VerifiedToken>(v));
  EXPECT_EQ(std::get<VerifiedToken>(v).user, "42");
  EXPECT_EQ(std::get<VerifiedToken>(v).tier, "silver");
}

TEST(JwtVerifierTest, ReasonsHaveTheNamesOfTheSpec) {
  EXPECT_EQ(reason_name(AuthFailure::kMissing), "missing");
  EXPECT_EQ(reason_name(AuthFailure::kBadSignature), "bad_signature");
  EXPECT_EQ(reason_name(AuthFailure::kNotYetValid), "not_yet_valid");
  EXPECT_EQ(reason_name(AuthFailure::kAlgorithmNotAllowed), "algorithm_not_allowed");
}

}  // namespace
}  // namespace sluice::auth
