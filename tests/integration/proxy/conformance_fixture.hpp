// SPDX-License-Identifier: Apache-2.0
#pragma once

// Message-head conformance rows (docs/http-conformance.md): what a row is, what the upstream
// must receive, and the fixture that sends a row's raw bytes to the real binary and compares
// what a recording upstream gets. The rows: conformance_test.cpp (request heads) and
// conformance_response_test.cpp (response heads).

#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/recording_upstream.hpp"

namespace sluice::testing {
namespace conformance_support {

using nlohmann::json;
using std::chrono::milliseconds;

/// Which upstream a row's request must reach.
enum class To {
  kNone,  ///< refused: neither upstream sees a byte of it
  kApi,   ///< the backend of the route for host api.example.test
  kMain,  ///< the backend of every other route
};

struct Row {
  const char* name;
  std::string request;  ///< the client's raw bytes
  unsigned status;      ///< the status the client gets
  To to = To::kNone;
  /// With `to` set: exactly what that upstream receives (its generated X-Request-Id line
  /// removed, see recorded()).
  std::string forwarded = {};
  bool closes = false;  ///< the gateway closes the client connection after answering
  /// The upstream's answer (response rows).
  RecordingUpstream::Reply reply = {};
  /// Response fields the client must get with exactly these values, in order (none = absent).
  std::vector<std::pair<std::string, std::vector<std::string>>> fields = {};
  std::optional<std::string> body = std::nullopt;  ///< the client's body, when checked
};

inline constexpr std::string_view kForwarded =
    "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n";

/// The head the upstream receives: the request line and the fields the row names, then the
/// forwarding fields the gateway adds (X-Forwarded-Host: the Host the upstream gets, when not
/// empty), the empty line and `body`.
inline std::string up(std::string_view head, std::string_view body = {}) {
  std::string forwarded_host;
  if (const auto at = head.find("\r\nHost: "); at != std::string_view::npos) {
    const auto value = head.substr(at + 8, head.find("\r\n", at + 8) - (at + 8));
    if (!value.empty()) {
      forwarded_host = "X-Forwarded-Host: " + std::string(value) + "\r\n";
    }
  }
  return std::string(head) + std::string(kForwarded) + forwarded_host + "\r\n" + std::string(body);
}

/// What an upstream received, without the X-Request-Id line the gateway generated (random).
inline std::string recorded(const RecordingUpstream& upstream, std::size_t index) {
  static const std::regex generated_id("X-Request-Id: [0-9a-f]{32}\r\n");
  return std::regex_replace(upstream.requests().at(index), generated_id, "");
}

inline std::vector<std::string> values(const Response& res, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& field : res.base()) {
    if (boost::beast::iequals(field.name_string(), name)) {
      out.emplace_back(field.value());
    }
  }
  return out;
}

class ConformanceTest : public ::testing::Test {
 protected:
  RecordingUpstream api;
  RecordingUpstream main;
  json config = [this] {
    json c = minimal_gateway_config({main.endpoint()});
    c["backends"]["api"] = {{"endpoints", {api.endpoint()}}};
    c["routes"] = json::array({
        {{"name", "api"}, {"prefix", "/"}, {"host", "api.example.test"}, {"backend", "api"}},
        {{"name", "options"},
         {"prefix", "/"},
         {"host", "opt.example.test"},
         {"methods", {"OPTIONS"}},
         {"backend", "demo"}},
        {{"name", "all"}, {"prefix", "/"}, {"backend", "demo"}},
    });
    c["http"] = {{"header_timeout_ms", 2000}};
    // The response rows fail on purpose, many in a row: no breaker may step in.
    c["backends"]["demo"]["breaker"] = {{"enabled", false}};
    return c;
  }();

  void run(const Row& row, std::uint16_t port) {
    SCOPED_TRACE(row.name);
    api.reply_with(row.reply);
    main.reply_with(row.reply);
    const std::size_t api_before = api.request_count();
    const std::size_t main_before = main.request_count();
    HttpClient client(port, milliseconds(3000));
    client.send_raw(row.request);
    const std::optional<Response> res = client.read_response(milliseconds(3000));
    ASSERT_TRUE(res) << "no answer";
    EXPECT_EQ(res->result_int(), row.status) << res->body();
    const bool closes = row.closes || row.status == 400;  // a broken head always closes
    if (closes && res->version() == 11) {                 // (HTTP/1.0 closes unless told otherwise)
      EXPECT_EQ((*res)[http::field::connection], "close");
    }
    for (const auto& [name, expected] : row.fields) {
      EXPECT_EQ(values(*res, name), expected) << name;
    }
    if (row.body) {
      EXPECT_EQ(res->body(), *row.body);
    }
    EXPECT_EQ(client.closed_by_peer(milliseconds(closes ? 3000 : 100)), closes);

    RecordingUpstream& target = row.to == To::kApi ? api : main;
    RecordingUpstream& other = row.to == To::kApi ? main : api;
    if (row.to == To::kNone) {
      EXPECT_EQ(api.request_count(), api_before) << "forwarded: " << recorded(api, api_before);
      EXPECT_EQ(main.request_count(), main_before) << "forwarded: " << recorded(main, main_before);
      return;
    }
    ASSERT_TRUE(target.wait_for_requests((row.to == To::kApi ? api_before : main_before) + 1,
                                         milliseconds(3000)));
    EXPECT_EQ(recorded(target, row.to == To::kApi ? api_before : main_before), row.forwarded);
    EXPECT_EQ(other.request_count(), row.to == To::kApi ? main_before : api_before);
  }
};

}  // namespace conformance_support
}  // namespace sluice::testing
