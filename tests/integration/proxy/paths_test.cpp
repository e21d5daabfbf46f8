// SPDX-License-Identifier: Apache-2.0
// Request paths are normalized before routing, and the normal form is what the upstream gets
// (docs/paths.md). The demo backend's /headers/... echoes the target it received; the access
// log (stdout) names the route each request took.
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

/// Routes: `login` (prefix /headers/api/login), `strip` (prefix /strip, stripped) and `all`
/// (prefix /), all to the demo backend.
json paths_config(const DemoBackend& backend) {
  json config = minimal_gateway_config({backend.endpoint()});
  config["routes"] = json::array(
      {{{"name", "login"}, {"prefix", "/headers/api/login"}, {"backend", "demo"}},
       {{"name", "strip"}, {"prefix", "/strip"}, {"backend", "demo"}, {"strip_prefix", true}},
       {{"name", "all"}, {"prefix", "/"}, {"backend", "demo"}}});
  return config;
}

/// The access log line of the request with X-Request-Id `id`.
json log_entry(SluiceProcess& gateway, const std::string& id) {
  std::string line;
  if (!gateway.process().wait_for_line(R"("request_id":")" + id + "\"", kDefaultTimeout, &line)) {
    throw std::runtime_error("no access log line for " + id);
  }
  return json::parse(line);
}

struct Case {
  const char* sent;
  const char* route;
  const char* upstream_target;
  const char* logged_path = nullptr;  ///< when not the upstream target's path (strip_prefix)
};

/// Sends each case with X-Request-Id `<prefix>-<n>` and checks the target the upstream got, then
/// (once all are sent, so the log's hand-over interval is waited out once) each log line.
void expect_routed(SluiceProcess& gateway, std::span<const Case> cases, const std::string& prefix) {
  HttpClient client(gateway.proxy_port());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].sent);
    const Response res = client.get(cases[i].sent, {{"X-Request-Id", prefix + std::to_string(i)}});
    ASSERT_EQ(res.result_int(), 200U) << res.body();
    EXPECT_EQ(json::parse(res.body())["target"], cases[i].upstream_target);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.sent);
    const json entry = log_entry(gateway, prefix + std::to_string(i));
    EXPECT_EQ(entry["route"], c.route);
    const std::string target = c.upstream_target;
    EXPECT_EQ(entry["path"],
              c.logged_path != nullptr ? c.logged_path : target.substr(0, target.find('?')))
        << "the log shows the normalized path that was routed";
  }
}

TEST(PathsTest, EverySpellingOfAPathTakesItsRouteAndTheUpstreamGetsTheNormalForm) {
  DemoBackend backend;
  SluiceProcess gateway(paths_config(backend));
  const Case cases[] = {
      {"/headers/api/login", "login", "/headers/api/login"},
      {"/headers/api/./login", "login", "/headers/api/login"},
      {"/headers/api//login", "login", "/headers/api/login"},
      {"/headers/api/%6cogin", "login", "/headers/api/login"},
      {"/headers/api/%6Cogin/", "login", "/headers/api/login/"},
      {"/headers/api/users/../login", "login", "/headers/api/login"},
      {"//headers/api/%2e/login?next=/../x%2e", "login", "/headers/api/login?next=/../x%2e"},
      // Encoded slash, backslash and NUL stay encoded (hex upper-cased) inside their segment.
      {"/headers/api/login%2fx", "all", "/headers/api/login%2Fx"},
      {"/headers/a%5cb/%00", "all", "/headers/a%5Cb/%00"},
      // strip_prefix acts on the normal form.
      {"/x/../strip/./headers/y?q=1", "strip", "/headers/y?q=1", "/strip/headers/y"},
  };
  expect_routed(gateway, cases, "path-");
}

TEST(PathsTest, WithoutMergeSlashesADoubleSlashIsItsOwnPath) {
  DemoBackend backend;
  json config = paths_config(backend);
  config["http"] = {{"merge_slashes", false}};
  SluiceProcess gateway(config);
  const Case cases[] = {{"/headers/api//login", "all", "/headers/api//login"},
                        {"/headers/api/./login", "login", "/headers/api/login"}};
  expect_routed(gateway, cases, "keep-");
}

TEST(PathsTest, APathAboveTheRootOrBadlyEncodedIs400AndNeverForwarded) {
  RawPeer upstream(RawPeer::Mode::kRespondOkThenCloseIdle, std::chrono::milliseconds(5000));
  SluiceProcess gateway(minimal_gateway_config({upstream.endpoint()}));
  for (const char* path : {"/..", "/../etc/passwd", "/a/../../b", "/%2e%2e/x", "/a/%2E%2e/..",
                           "/a%zz", "/a%4", "/%"}) {
    SCOPED_TRACE(path);
    HttpClient client(gateway.proxy_port());
    client.send_raw("GET " + std::string(path) + " HTTP/1.1\r\nHost: a\r\n\r\n");
    const std::string answer = client.read_raw_until_close();
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer;
    EXPECT_NE(answer.find("\"error\":\"bad_request\""), std::string::npos) << answer;
  }
  // A good request after them is forwarded: the peer counts exactly that one.
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.get("/fine").result_int(), 200U);
  EXPECT_EQ(upstream.requests(), 1U);
}

}  // namespace
}  // namespace sluice::testing
