// SPDX-License-Identifier: Apache-2.0
// X-Forwarded-Host and the `http.request_id` policy through the real binary
// (docs/behaviour.md "Proxy hygiene"): what the backend sees, from a trusted peer and not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using Values = std::vector<std::string>;

class ForwardedTest : public ::testing::Test, public ProxyFixtureBase {
 protected:
  /// The values of `name` the backend saw for GET /headers with `headers`.
  Values seen(const SluiceProcess& gateway, const Headers& headers, std::string_view name) {
    HttpClient client(gateway.proxy_port());
    return header_values(echoed_request(client, "/headers", headers), name);
  }
};

TEST_F(ForwardedTest, ForwardedHostIsTheClientsHostUnlessATrustedProxySentOne) {
  SluiceProcess open(config);  // no trusted proxies
  EXPECT_EQ(seen(open, {{"Host", "api.example.test:8080"}}, "X-Forwarded-Host"),
            Values{"api.example.test:8080"});
  EXPECT_EQ(seen(open, {{"Host", "api.example.test"}, {"X-Forwarded-Host", "evil.test"}},
                 "X-Forwarded-Host"),
            Values{"api.example.test"});
  {  // an absolute-form target's authority is the host
    HttpClient client(open.proxy_port());
    client.send_raw("GET http://abs.example.test/headers HTTP/1.1\r\nHost: other.test\r\n\r\n");
    const auto res = client.read_response();
    ASSERT_TRUE(res);
    EXPECT_EQ(header_values(json::parse(res->body()), "X-Forwarded-Host"),
              Values{"abs.example.test"});
  }
  config["http"] = {{"trusted_proxies", {"127.0.0.1/32"}}};
  SluiceProcess behind(config);
  EXPECT_EQ(seen(behind, {{"Host", "internal:9"}, {"X-Forwarded-Host", "www.example.test"}},
                 "X-Forwarded-Host"),
            Values{"www.example.test"});
  EXPECT_EQ(seen(behind, {{"Host", "internal:9"}}, "X-Forwarded-Host"), Values{"internal:9"});
}

TEST_F(ForwardedTest, RequestIdPolicyPreserveTrustedAndReplace) {
  const Headers with_id = {{"X-Request-Id", "client-chosen-1"}};
  const auto id_seen = [&](const SluiceProcess& gateway) {
    const Values ids = seen(gateway, with_id, "X-Request-Id");
    return ids.size() == 1 ? ids[0] : std::string("(") + std::to_string(ids.size()) + " ids)";
  };
  SluiceProcess preserve(config);  // the default
  EXPECT_EQ(id_seen(preserve), "client-chosen-1");

  config["http"] = {{"request_id", "trusted"}, {"trusted_proxies", {"10.0.0.0/8"}}};
  SluiceProcess untrusted(config);
  const std::string fresh = id_seen(untrusted);
  EXPECT_NE(fresh, "client-chosen-1");
  EXPECT_EQ(fresh.size(), 32U) << fresh;

  config["http"]["trusted_proxies"] = {"127.0.0.1/32"};
  SluiceProcess trusted(config);
  EXPECT_EQ(id_seen(trusted), "client-chosen-1");

  config["http"]["request_id"] = "replace";
  SluiceProcess replace(config);
  HttpClient client(replace.proxy_port());
  const Response res = client.get("/headers", with_id);
  const Values upstream = header_values(json::parse(res.body()), "X-Request-Id");
  ASSERT_EQ(upstream.size(), 1U);
  EXPECT_NE(upstream[0], "client-chosen-1");
  EXPECT_EQ(res["X-Request-Id"], upstream[0]);  // the client learns the id that was used
}

}  // namespace
}  // namespace sluice::testing
