// SPDX-License-Identifier: Apache-2.0
// The `auth` and `tiers` sections, a route's `auth` and the verifying identity sources
// (docs/identity.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using namespace std::chrono_literals;
using test_support::parsed;
using test_support::problems_of;
using test_support::valid_document;
using ::testing::ElementsAre;
using Json = nlohmann::json;

/// The valid document with a JWT section, a key file and both verifying sources.
Json auth_document() {
  auto doc = valid_document();
  doc["auth"] = Json::parse(R"({
    "jwt": {"issuer": "https://id.example.com/", "audiences": ["api"],
            "jwks_file": "/etc/sluice/jwks.json", "tier_claim": "plan"},
    "api_keys": {"keys_file": "/etc/sluice/keys.json"}
  })");
  doc["identity"] = Json::parse(R"([{"jwt": true}, {"api_key": true}, {"client_ip": true}])");
  doc["routes"][0]["auth"] = "required";
  return doc;
}

TEST(AuthSectionsTest, AbsentMeansNoVerificationAndRoutesOff) {
  const Config config = parsed(valid_document());
  EXPECT_FALSE(config.auth.jwt);
  EXPECT_FALSE(config.auth.api_keys);
  ASSERT_TRUE(config.auth.failure_policy);
  EXPECT_EQ(config.auth.failure_policy->failures, 20U);
  EXPECT_EQ(config.routes[0].auth, RouteAuth::kOff);
  EXPECT_FALSE(config.routes[0].strip_credentials);
  EXPECT_TRUE(config.tiers.empty());
}

TEST(AuthSectionsTest, AFullSectionIsReadWithItsDefaults) {
  auto doc = auth_document();
  doc["routes"][0]["strip_credentials"] = true;
  doc["tiers"] = Json::parse(R"({"standard": {"gold": {"requests": 5000}}})");
  const Config config = parsed(doc);
  ASSERT_TRUE(config.auth.jwt);
  const JwtConfig& jwt = *config.auth.jwt;
  EXPECT_EQ(jwt.issuer, "https://id.example.com/");
  EXPECT_THAT(jwt.audiences, ElementsAre("api"));
  EXPECT_THAT(jwt.algorithms, ElementsAre("ES256", "RS256", "EdDSA"));
  EXPECT_EQ(jwt.user_claim, "sub");
  EXPECT_EQ(jwt.tier_claim, "plan");
  EXPECT_EQ(jwt.leeway, 30s);
  EXPECT_EQ(jwt.jwks_refresh, 300s);
  ASSERT_TRUE(config.auth.api_keys);
  EXPECT_EQ(config.auth.api_keys->header, "X-API-Key");
  EXPECT_EQ(config.routes[0].auth, RouteAuth::kRequired);
  EXPECT_TRUE(config.routes[0].strip_credentials);
  EXPECT_EQ(config.tiers.at("standard").at("gold"), 5000U);
  EXPECT_EQ(config.identity[0].kind, IdentitySource::Kind::kJwt);
  EXPECT_EQ(config.identity[1].kind, IdentitySource::Kind::kApiKey);
}

TEST(AuthSectionsTest, WhatToJsonWritesParsesBackToTheSameConfig) {
  auto doc = auth_document();
  doc["auth"]["failure_policy"] = nullptr;
  doc["tiers"] = Json::parse(R"({"standard": {"gold": {"requests": 5000}}})");
  const Config config = parsed(doc);
  EXPECT_EQ(parsed(to_json(config)), config);
}

TEST(AuthSectionsTest, HmacNeedsASecretFromTheEnvironmentAndNoneIsNeverAnAlgorithm) {
  auto doc = auth_document();
  doc["auth"]["jwt"]["algorithms"] = Json::parse(R"(["HS256", "none"])");
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(auth.jwt.algorithms[1]: must be one of "ES256", "ES384", "RS256", )"
                          R"("PS256", "EdDSA", "HS256" ("none" is never accepted))",
                          "auth.jwt.algorithms: HS256 needs hs256_secret_env"));
  doc["auth"]["jwt"]["algorithms"] = Json::parse(R"(["ES256"])");
  doc["auth"]["jwt"]["hs256_secret_env"] = "JWT_SECRET";
  EXPECT_THAT(problems_of(doc), ElementsAre(R"(auth.jwt.hs256_secret_env: is set but "HS256" )"
                                            R"(is not in algorithms)"));
}

TEST(AuthSectionsTest, PublicKeyAlgorithmsNeedOneKeySetOverHttps) {
  auto doc = auth_document();
  doc["auth"]["jwt"]["jwks_file"] = nullptr;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("auth.jwt: needs jwks_file or jwks_url for the public-key algorithms "
                          "listed"));
  doc["auth"]["jwt"]["jwks_url"] = "http://id.example.com/jwks";
  EXPECT_THAT(problems_of(doc), ElementsAre("auth.jwt.jwks_url: must be an https:// URL"));
  doc["auth"]["jwt"]["jwks_file"] = "/etc/jwks.json";
  doc["auth"]["jwt"]["jwks_url"] = "https://id.example.com/jwks";
  EXPECT_THAT(problems_of(doc),
              ElementsAre("auth.jwt: set one of jwks_file and jwks_url, not both"));
}

TEST(AuthSectionsTest, VerifyingSourcesNeedTheirSectionsAndAuthRoutesNeedASource) {
  auto doc = auth_document();
  doc.erase("auth");
  EXPECT_THAT(problems_of(doc), ElementsAre("identity[0].jwt: needs auth.jwt",
                                            "identity[1].api_key: needs auth.api_keys"));
  doc = valid_document();
  doc["routes"][0]["auth"] = "optional";
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(routes[0].auth: needs a {"jwt": true} or {"api_key": true} )"
                          R"(identity source)"));
  doc["routes"][0]["auth"] = "sometimes";
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(routes[0].auth: must be one of "off", "optional", "required")"));
}

TEST(AuthSectionsTest, TiersNameExistingPoliciesAndCountsOnly) {
  auto doc = auth_document();
  doc["tiers"] = Json::parse(R"({"premium": {"gold": {"requests": 5}},
                                 "standard": {"gold": {"requests": -1}, "": {"requests": 1}}})");
  EXPECT_THAT(problems_of(doc),
              ElementsAre("tiers.premium: no such policy in limits",
                          R"(tiers.standard[""]: empty tier name)",
                          "tiers.standard.gold.requests: must be between 0 and 4294967295"));
}

TEST(AuthSectionsTest, TheFailurePolicyChecksItsWindow) {
  auto doc = auth_document();
  doc["auth"]["failure_policy"] = Json::parse(R"({"failures": 0, "window_ms": 10000,
                                                  "buckets": 3})");
  EXPECT_THAT(problems_of(doc),
              ElementsAre("auth.failure_policy.failures: must be between 1 and 1000000",
                          "auth.failure_policy.buckets: must divide window_ms (10000) evenly"));
  doc["auth"]["failure_policy"] = Json::parse(R"({"failures": 5, "window_ms": 10000})");
  EXPECT_EQ(parsed(doc).auth.failure_policy->failures, 5U);
}

TEST(AuthSectionsTest, ApiKeysComeFromAFileAndTheConfigAsHashesOnly) {
  auto doc = auth_document();
  const std::string hash(64, 'a');
  doc["auth"]["api_keys"] = Json::parse(R"({"header": "X Key", "keys_file": "", "keys": [
      {"sha256": ")" + hash + R"(", "user": "robot", "tier": "gold"},
      {"sha256": ")" + hash + R"(", "user": ""},
      {"sha256": "ABC", "user": "x", "key": "clear"}]})");
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(auth.api_keys.header: must be an HTTP header name (e.g. "X-API-Key"))",
                          "auth.api_keys.keys_file: must not be empty (use null for none)",
                          "auth.api_keys.keys[1].sha256: the same key is listed twice",
                          "auth.api_keys.keys[1].user: must not be empty",
                          "auth.api_keys.keys[2].key: unknown field",
                          "auth.api_keys.keys[2].sha256: must be 64 lower-case hex digits"));
  doc["auth"]["api_keys"] =
      Json::parse(R"({"keys": [{"sha256": ")" + hash + R"(", "user": "robot", "tier": "gold"}]})");
  const Config config = parsed(doc);
  ASSERT_TRUE(config.auth.api_keys);
  EXPECT_FALSE(config.auth.api_keys->keys_file);
  EXPECT_EQ(config.auth.api_keys->keys, (std::vector<ApiKeyEntry>{{hash, "robot", "gold"}}));
  EXPECT_EQ(parsed(to_json(config)), config);
}

}  // namespace
}  // namespace sluice::config
