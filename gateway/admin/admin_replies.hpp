// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/http/status.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/admin/admin_server.hpp"
#include "gateway/config/problems.hpp"

// The admin API's JSON replies and request bodies (docs/behaviour.md "Admin API"): success is the
// resulting resource, a bad request `{"error", "field"}` where `field` is the path in the config
// document as `sluice --check` prints it (`limits.standard.requests`, `routes[2].backend`).
// Stateless functions; thread-safe.
namespace sluice::admin {

struct CommitError;  // admin_api.hpp

/// `body` as indented JSON (`Cache-Control: no-store`), keep-alive as the request asked.
[[nodiscard]] Response reply(const Request& req, boost::beast::http::status status,
                             const nlohmann::json& body);
[[nodiscard]] Response no_content(const Request& req);
/// `{"error": message, "field": field}` with `status` (400 unless told).
[[nodiscard]] Response field_error(
    const Request& req, std::string_view message, std::string_view field,
    boost::beast::http::status status = boost::beast::http::status::bad_request);
/// 400 for a rejected change: the first problem as error/field, all of them under "problems".
/// Precondition: !problems.empty().
[[nodiscard]] Response problems_reply(const Request& req,
                                      const std::vector<config::Problem>& problems);
[[nodiscard]] Response not_found(const Request& req, std::string message);
[[nodiscard]] Response method_not_allowed(const Request& req, std::string_view allow);
/// The answer to a change the gateway did not make (docs/admin-api.md): 409, 412, 503 or 500.
[[nodiscard]] Response commit_error_reply(const Request& req, const CommitError& error);

/// The request body as a JSON object (key order kept) that will land at config path `base`
/// ("" for the document root), or the 400 to answer: malformed JSON (field "(body)"), a
/// duplicate key, or not an object.
[[nodiscard]] std::variant<nlohmann::ordered_json, Response> read_object(const Request& req,
                                                                         std::string_view base);
/// For bodies that carry exactly one member `key` (`{"endpoints": [...]}`): that member, or the
/// 400 to answer (`key` missing, or another member, which is an unknown field at `base`).
[[nodiscard]] std::variant<nlohmann::ordered_json, Response> only_member(
    const Request& req, const nlohmann::ordered_json& body, std::string_view base,
    const std::string& key);

}  // namespace sluice::admin
