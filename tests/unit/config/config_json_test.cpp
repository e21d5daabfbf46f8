// SPDX-License-Identifier: Apache-2.0
// to_json(Config): what the admin API shows is the effective config, and it reads back as the
// same Config.
#include "gateway/config/config_json.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using nlohmann::json;
using test_support::parsed;

TEST(ConfigJsonTest, TheShippedConfigReadsBackAsTheSameConfig) {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/conf/sluice.json");
  const Config config = parsed(json::parse(in));
  EXPECT_EQ(parsed(to_json(config)), config);
}

TEST(ConfigJsonTest, EveryDefaultIsSpelledOut) {
  const json out = to_json(parsed(test_support::valid_document()));
  EXPECT_EQ(out["limits"]["standard"],
            json::parse(R"({"requests":100,"window_ms":60000,"buckets":10,"mode":"enforce"})"));
  EXPECT_EQ(out["backends"]["users"]["breaker"],
            json::parse(R"({"enabled":true,"k":1.5,"protection":5.0,"window_ms":10000,
                            "buckets":40,"failure_statuses":[500,502,503,504],
                            "failure_grpc_statuses":[14,4,8],"mode":"enforce","slow_ms":0})"));
  EXPECT_EQ(out["backends"]["users"]["protocol"], "http1");
  EXPECT_EQ(out["backends"]["users"]["max_streams_per_connection"], 100);
  EXPECT_EQ(out["routes"][0],
            json::parse(R"({"name":"users","prefix":"/api/users","backend":"users",
                            "limit":"standard","methods":null,"host":null,"strip_prefix":false,"upgrades":true,
                            "auth":"off","strip_credentials":false})"));
  EXPECT_EQ(out["admin"], json::parse(R"({"address":"127.0.0.1","port":9901,"token_env":null,
                                          "persist":false,"top_users":true})"));
  EXPECT_EQ(out["identity"], json::parse(R"([{"client_ip":true}])"));
  EXPECT_EQ(out["store"], json::parse(R"({"type":"memory","max_keys":1000000})"));
  EXPECT_EQ(out["overrides"], json::object());
}

TEST(ConfigJsonTest, ARedisStoreAndEveryOptionalFieldRoundTrip) {
  json document = test_support::valid_document();
  document["store"] = json::parse(R"({"type":"redis","host":"redis.internal","port":6380,
      "password_env":"REDIS_PASSWORD","timeout_ms":20,"on_error":"deny","max_keys":500,
      "mode":"hybrid","sync_ms":250})");
  document["identity"] =
      json::parse(R"([{"header":"X-API-Key"},{"bearer":true},{"client_ip":true}])");
  document["http"] = json::parse(
      R"({"trusted_proxies":["10.0.0.0/8","::1/128"],"max_connections":7,"merge_slashes":false,
          "tunnel_idle_timeout_ms":1234,"request_id":"replace"})");
  document["access_log"] = json::parse(R"({"path":"/var/log/a.log","user_hash_key_env":"K"})");
  document["overrides"] = json::parse(R"({"standard":{"partner.42":{"requests":0}}})");
  document["routes"][0]["methods"] = json::array({"GET", "POST"});
  document["routes"][0]["host"] = "api.example.com";
  document["routes"][0]["strip_prefix"] = true;
  document["routes"][0]["upgrades"] = false;
  document["backends"]["users"]["balance"] = "least_request";
  document["backends"]["users"]["breaker"] = json::parse(
      R"({"enabled":false,"k":2.5,"protection":0,"window_ms":2000,"buckets":4,"failure_statuses":[],
          "failure_grpc_statuses":[13]})");
  document["backends"]["users"]["tls"] = json::parse(
      R"({"ca":"/ca.pem","verify":false,"server_name":"users.internal","cert":"/c","key":"/k"})");
  document["backends"]["users"]["protocol"] = "h2";
  document["backends"]["users"]["max_streams_per_connection"] = 16;
  document["backends"]["users"]["health_check"] =
      json::parse(R"({"type":"grpc","service":"shop.Orders","interval_ms":1000})");
  document.erase("listen");
  document["listeners"] = json::parse(R"([{"name":"https","port":8443,"tls":{"certificates":
      [{"cert":"/a.pem","key":"/a.key","server_names":["*.a.test"],"ocsp":"fetch"}],
      "min_version":"1.3","ciphers":"ECDHE-ECDSA-AES256-GCM-SHA384",
      "ciphersuites":"TLS_AES_256_GCM_SHA384","groups":"P-384",
      "client_ca":"/partners.pem","require_client_cert":true},"proxy_protocol":true}])");
  const Config config = parsed(document);
  const json out = to_json(config);
  EXPECT_EQ(out["store"]["password_env"], "REDIS_PASSWORD");
  EXPECT_EQ(out["http"]["trusted_proxies"], json::parse(R"(["10.0.0.0/8","::1/128"])"));
  EXPECT_EQ(out["http"]["merge_slashes"], false);
  EXPECT_EQ(out["http"]["tunnel_idle_timeout_ms"], 1234);
  EXPECT_EQ(out["http"]["request_id"], "replace");
  EXPECT_EQ(out["routes"][0]["upgrades"], false);
  EXPECT_EQ(out["listeners"][0]["proxy_protocol"], true);
  EXPECT_EQ(out["access_log"]["user_hash_key_env"], "K");
  EXPECT_EQ(out["backends"]["users"]["tls"]["server_name"], "users.internal");
  EXPECT_EQ(out["listeners"][0]["tls"]["require_client_cert"], true);
  EXPECT_EQ(out["listeners"][0]["tls"]["groups"], "P-384");
  EXPECT_EQ(out["listeners"][0]["tls"]["certificates"][0]["ocsp"], "fetch");
  EXPECT_EQ(parsed(out), config);
}

}  // namespace
}  // namespace sluice::config
