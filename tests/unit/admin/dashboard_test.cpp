// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/dashboard.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http.hpp>
#include <regex>
#include <string>

namespace sluice::admin {
namespace {

namespace http = boost::beast::http;

Request dashboard_request(std::string target, http::verb method = http::verb::get) {
  Request req(method, target, 11);
  req.set(http::field::host, "127.0.0.1");
  return req;
}

Response served(std::string target, http::verb method = http::verb::get) {
  auto res = dashboard_response(dashboard_request(std::move(target), method));
  EXPECT_TRUE(res.has_value());
  return res ? std::move(*res) : Response{};
}

void expect_strict_fields(const Response& res) {
  EXPECT_EQ(res["Content-Security-Policy"],
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(res[http::field::cache_control], "no-cache");
}

TEST(DashboardTest, ServesThePageItsScriptAndItsStylesWithTheirTypes) {
  for (const std::string target : {"/admin/ui", "/admin/ui/", "/admin/ui?tab=1"}) {
    const auto page = served(target);
    EXPECT_EQ(page.result(), http::status::ok) << target;
    EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8") << target;
    EXPECT_EQ(page.body(), detail::kDashboardHtml) << target;
    expect_strict_fields(page);
  }
  const auto script = served("/admin/ui/app.js");
  EXPECT_EQ(script.result(), http::status::ok);
  EXPECT_EQ(script[http::field::content_type], "text/javascript; charset=utf-8");
  EXPECT_EQ(script.body(), detail::kDashboardJs);
  expect_strict_fields(script);
  const auto styles = served("/admin/ui/app.css");
  EXPECT_EQ(styles.result(), http::status::ok);
  EXPECT_EQ(styles[http::field::content_type], "text/css; charset=utf-8");
  EXPECT_EQ(styles.body(), detail::kDashboardCss);
  expect_strict_fields(styles);
  EXPECT_EQ(script[http::field::content_length], std::to_string(detail::kDashboardJs.size()));
}

TEST(DashboardTest, LeavesEveryOtherPathToTheTokenProtectedApi) {
  for (const char* target : {"/admin/uix", "/admin/u", "/admin/routes", "/admin", "/metrics",
                             "/admin/limits/ui", "/ui"}) {
    EXPECT_FALSE(dashboard_response(dashboard_request(target)).has_value()) << target;
  }
}

TEST(DashboardTest, AnswersUnknownFilesAndOtherMethodsWithTheSameFields) {
  const auto missing = served("/admin/ui/secrets.json");
  EXPECT_EQ(missing.result(), http::status::not_found);
  expect_strict_fields(missing);
  const auto post = served("/admin/ui", http::verb::post);
  EXPECT_EQ(post.result(), http::status::method_not_allowed);
  EXPECT_EQ(post[http::field::allow], "GET, HEAD");
  expect_strict_fields(post);
}

TEST(DashboardTest, HeadGivesTheLengthWithoutTheBody) {
  const auto head = served("/admin/ui/app.css", http::verb::head);
  EXPECT_EQ(head.result(), http::status::ok);
  EXPECT_EQ(head[http::field::content_length], std::to_string(detail::kDashboardCss.size()));
  EXPECT_TRUE(head.body().empty());
}

TEST(DashboardTest, RevalidatesWithTheEtag) {
  const auto first = served("/admin/ui/app.js");
  const std::string etag(first[http::field::etag]);
  ASSERT_EQ(etag.size(), 18U);
  EXPECT_EQ(etag.front(), '"');
  EXPECT_NE(etag, std::string(served("/admin/ui")[http::field::etag]));
  auto again = dashboard_request("/admin/ui/app.js");
  again.set(http::field::if_none_match, etag);
  const auto unchanged = dashboard_response(again);
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(unchanged->result(), http::status::not_modified);
  EXPECT_TRUE(unchanged->body().empty());
  expect_strict_fields(*unchanged);
  again.set(http::field::if_none_match, "\"0000000000000000\"");
  EXPECT_EQ(dashboard_response(again)->result(), http::status::ok);
}

// The page loads nothing from elsewhere and keeps data out of markup: what the CSP enforces in
// the browser, checked in the files too so a change that needs a looser policy fails here first.
TEST(DashboardTest, FilesNameNoOtherOriginAndRenderNoMarkup) {
  const std::regex other_origin(R"x([a-zA-Z][a-zA-Z0-9+.-]*://|["'(=]\s*//)x");
  for (const std::string_view file :
       {detail::kDashboardHtml, detail::kDashboardJs, detail::kDashboardCss}) {
    EXPECT_FALSE(std::regex_search(file.begin(), file.end(), other_origin)) << file.substr(0, 80);
    EXPECT_FALSE(file.empty());
  }
  const std::string script(detail::kDashboardJs);
  for (const char* banned : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                             "eval(", "new Function", "localStorage", "document.cookie"}) {
    EXPECT_EQ(script.find(banned), std::string::npos) << banned;
  }
  EXPECT_NE(script.find("sessionStorage"), std::string::npos);
  const std::string html(detail::kDashboardHtml);
  EXPECT_NE(html.find(R"(<script src="/admin/ui/app.js" defer></script>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<link rel="stylesheet" href="/admin/ui/app.css">)"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"x(<script>|<style|\sstyle=|\son[a-z]+=)x")));
}

}  // namespace
}  // namespace sluice::admin
