// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/router.hpp"

#include <gtest/gtest.h>

namespace sluice::proxy {
namespace {

Route route(std::string name, std::string prefix, std::vector<std::string> methods = {},
            std::optional<std::string> host = std::nullopt, bool strip = false) {
  Route r;
  r.name = std::move(name);
  r.prefix = std::move(prefix);
  r.methods = std::move(methods);
  r.host = std::move(host);
  r.strip_prefix = strip;
  return r;
}

TEST(RouterTest, PrefixesMatchOnSegmentBoundaries) {
  EXPECT_TRUE(prefix_matches("/api/users", "/api/users"));
  EXPECT_TRUE(prefix_matches("/api/users", "/api/users/7"));
  EXPECT_FALSE(prefix_matches("/api/users", "/api/usersX"));
  EXPECT_FALSE(prefix_matches("/api/users", "/api"));
  EXPECT_TRUE(prefix_matches("/", "/anything"));
  EXPECT_TRUE(prefix_matches("/api/", "/api/x"));
  EXPECT_FALSE(prefix_matches("/api/", "/api"));
}

TEST(RouterTest, FirstMatchingRouteWinsInOrder) {
  const Router router({route("users", "/api/users"), route("api", "/api"), route("all", "/")});
  EXPECT_EQ(router.match("h", "GET", "/api/users/7").route->name, "users");
  EXPECT_EQ(router.match("h", "GET", "/api/usersX").route->name, "api");
  EXPECT_EQ(router.match("h", "GET", "/other").route->name, "all");
}

TEST(RouterTest, MatchesTheHostWithoutPortOrCase) {
  const Router router({route("a", "/", {}, "api.example.com"), route("b", "/")});
  EXPECT_EQ(router.match("API.Example.com:8080", "GET", "/").route->name, "a");
  EXPECT_EQ(router.match("other.example.com", "GET", "/").route->name, "b");
  EXPECT_EQ(normalize_host("[::1]:80"), "::1");
  EXPECT_EQ(normalize_host("::1"), "::1");
}

TEST(RouterTest, NoRouteIs404AndAWrongMethodIs405WithAllow) {
  const Router router({route("w", "/w", {"POST"}), route("r", "/r", {"GET"})});
  EXPECT_EQ(router.match("h", "GET", "/nope").kind, RouteMatch::Kind::kNoRoute);
  const auto m = router.match("h", "DELETE", "/r/1");
  EXPECT_EQ(m.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "GET, HEAD");
  EXPECT_EQ(router.match("h", "HEAD", "/r").kind, RouteMatch::Kind::kMatched)
      << "HEAD is allowed wherever GET is";
}

TEST(RouterTest, AWrongMethodFallsThroughToALaterRoute) {
  const Router router({route("w", "/api", {"POST"}), route("all", "/")});
  EXPECT_EQ(router.match("h", "GET", "/api").route->name, "all");
}

TEST(RouterTest, AllowListsEveryMethodThePathAccepts) {
  const Router router({route("a", "/x", {"POST"}), route("b", "/x", {"GET", "POST"})});
  EXPECT_EQ(router.match("h", "PUT", "/x").allow, "POST, GET, HEAD");
}

TEST(RouterTest, AFullyQualifiedHostMatchesItsRoute) {
  const Router router({route("api", "/", {}, "api.example.test"), route("all", "/")});
  EXPECT_EQ(router.match("API.Example.Test.", "GET", "/x").route->name, "api");
  EXPECT_EQ(router.match("api.example.test.:8080", "GET", "/x").route->name, "api");
  EXPECT_EQ(router.match("api.example.test..", "GET", "/x").route->name, "all");
}

TEST(RouterTest, AsteriskFormMatchesOnlyARouteThatNamesOptions) {
  const Router router({route("any", "/"), route("get", "/", {"GET"}),
                       route("opt-b", "/b", {"OPTIONS"}, "b.test"),
                       route("opt", "/x", {"OPTIONS"})});
  EXPECT_EQ(router.match_asterisk("b.test")->name, "opt-b");
  EXPECT_EQ(router.match_asterisk("a.test")->name, "opt");
  const Router none({route("any", "/"), route("get", "/", {"GET", "HEAD"})});
  EXPECT_EQ(none.match_asterisk("a.test"), nullptr);
}

TEST(RouterTest, StripPrefixKeepsALeadingSlashAndTheQuery) {
  std::string scratch;
  const Route r = route("u", "/api/users", {}, std::nullopt, true);
  EXPECT_EQ(upstream_target(r, "/api/users/7", "?x=1", scratch), "/7?x=1");
  EXPECT_EQ(upstream_target(r, "/api/users", "", scratch), "/");
  EXPECT_EQ(upstream_target(r, "/api/users", "?x=1", scratch), "/?x=1");
  const Route slash = route("s", "/api/", {}, std::nullopt, true);
  EXPECT_EQ(upstream_target(slash, "/api/x", "", scratch), "/x");
  const Route keep = route("k", "/api", {}, std::nullopt, false);
  EXPECT_EQ(upstream_target(keep, "/api/x", "?y", scratch), "/api/x?y");
}

}  // namespace
}  // namespace sluice::proxy
