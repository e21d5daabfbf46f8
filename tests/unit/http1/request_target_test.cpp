// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/request_target.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::http1 {
namespace {

TEST(ValidHostTest, AcceptsTheUriHostGrammarWithAnOptionalPort) {
  for (const std::string host :
       {"api.example.test", "API.Example.Test", "api.example.test:8080",
        "api.example.test:", "localhost", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8443",
        "[2001:db8::ff00:42:8329]", "[::ffff:192.0.2.1]", "[v1.fe80::a+en1]", "a-b_c~d",
        "sub!$&'()*+,;=delims", "api.example.test.", ""}) {
    EXPECT_TRUE(valid_host(host)) << host;
  }
}

TEST(ValidHostTest, RefusesEverythingElse) {
  for (const std::string host : {"a b",
                                 "user@evil.example",
                                 "evil.example/x",
                                 "evil\x7f.example",
                                 "evil.example:80:80",
                                 "evil.example:8o",
                                 "evil.example\\x",
                                 "evil.example?x",
                                 "evil.example#x",
                                 "[::1",
                                 "[::1]x",
                                 "[::1]:8o",
                                 "[not-v6]",
                                 "[fe80::1%25eth0]",
                                 "[v.x]",
                                 "[vz.x]",
                                 "::1",
                                 "a\"b",
                                 "a<b",
                                 "api%2eexample.test",
                                 "\xc3\xa9.example",
                                 "a\tb"}) {
    EXPECT_FALSE(valid_host(host)) << host;
  }
}

TEST(RequestTargetTest, SplitsTheOriginForm) {
  const auto t = parse_request_target("/a/b?c=d&e");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->form, TargetForm::kOrigin);
  EXPECT_EQ(t->path, "/a/b");
  EXPECT_EQ(t->query, "?c=d&e");
  EXPECT_EQ(t->authority, "");
  EXPECT_EQ(parse_request_target("/a")->query, "");
  // An empty first segment is still origin-form (a path, not an authority).
  EXPECT_EQ(parse_request_target("//a/x")->path, "//a/x");
}

TEST(RequestTargetTest, SplitsTheAbsoluteFormByItsAuthority) {
  const auto t = parse_request_target("http://api.example.test:8080/x/y?q=/z");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->form, TargetForm::kAbsolute);
  EXPECT_EQ(t->authority, "api.example.test:8080");
  EXPECT_EQ(t->path, "/x/y");
  EXPECT_EQ(t->query, "?q=/z");
  // No path: the query's slash is not the path (the whole point of parsing it properly).
  const auto q = parse_request_target("HTTPS://api.example.test?next=/admin");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->authority, "api.example.test");
  EXPECT_EQ(q->path, "");
  EXPECT_EQ(q->query, "?next=/admin");
  EXPECT_EQ(parse_request_target("http://[::1]:80/")->authority, "[::1]:80");
}

TEST(RequestTargetTest, KnowsTheAsteriskForm) {
  EXPECT_EQ(parse_request_target("*")->form, TargetForm::kAsterisk);
  EXPECT_FALSE(parse_request_target("*x"));
}

TEST(RequestTargetTest, RefusesWhatIsNoRequestTargetSluiceServes) {
  for (const std::string target :
       {"", "x", "a:443", "api.example.test:443", "ftp://a/x", "http:/a/x", "http:a/x", "http://",
        "http:///x", "http://:80/x", "http://user@a/x", "http://user:pw@a/x", "http://a b/x",
        "http://a:80:80/x", "http://a#f", "/a#f", "/a?b#c", "mailto:x@y"}) {
    EXPECT_FALSE(parse_request_target(target)) << target;
  }
}

}  // namespace
}  // namespace sluice::http1
