// SPDX-License-Identifier: Apache-2.0
// The API keys part of the admin API (docs/identity.md "API keys"): keys are listed by hash,
// added from a clear key that is hashed at once and never stored, logged or answered, and
// removed. Changes are config changes (`auth.api_keys.keys`): persisted, versioned, audited and
// shared by a fleet like every other admin change.
#include <algorithm>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gateway/admin/admin_api.hpp"
#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_replies.hpp"
#include "gateway/auth/api_key_table.hpp"

namespace sluice::admin {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::size_t kMinKeyLength = 16;
constexpr std::size_t kMaxKeyLength = 512;

/// A key a client can send as a header value: visible ASCII, no spaces.
bool usable_key(std::string_view key) {
  return key.size() >= kMinKeyLength && key.size() <= kMaxKeyLength &&
         std::all_of(key.begin(), key.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

/// `user`'s keys added through the admin API (`auth.api_keys.keys`), as answers show them.
json admin_keys_of(const config::Config& c, const std::string& user) {
  json out = json::array();
  if (c.auth.api_keys) {
    for (const config::ApiKeyEntry& key : c.auth.api_keys->keys) {
      if (key.user == user) {
        out.push_back({{"sha256", key.sha256},
                       {"user", key.user},
                       {"tier", key.tier.empty() ? json(nullptr) : json(key.tier)}});
      }
    }
  }
  return out;
}

bool in_config(const config::Config& c, const std::string& sha256) {
  return std::any_of(c.auth.api_keys->keys.begin(), c.auth.api_keys->keys.end(),
                     [&](const config::ApiKeyEntry& k) { return k.sha256 == sha256; });
}

}  // namespace

// /admin/auth/keys and /admin/auth/keys/{user}.
Response AdminApi::route_auth_keys(const Call& call) {
  const auto& s = call.segments;
  const auto& req = call.req;
  const config::Config& c = context_.current().config();
  if (!c.auth.api_keys) {
    return not_found(req, "API keys are off (auth.api_keys)");
  }
  const auto table = context_.api_keys ? context_.api_keys() : nullptr;
  if (s.size() == 2) {
    if (req.method() != http::verb::get) {
      return method_not_allowed(req, "GET");
    }
    json keys = json::array();
    for (const auth::ApiKey& key : table ? table->keys() : std::vector<auth::ApiKey>{}) {
      keys.push_back({{"sha256", key.sha256},
                      {"user", key.user},
                      {"tier", key.tier.empty() ? json(nullptr) : json(key.tier)},
                      {"source", in_config(c, key.sha256) ? "admin" : "file"}});
    }
    return reply(req, http::status::ok, {{"keys", std::move(keys)}});
  }
  const std::string& user = s[2];
  const auto from_file = [&](const auth::ApiKey& k) {
    return k.user == user && !in_config(c, k.sha256);
  };
  const bool user_in_file =
      table && std::any_of(table->keys().begin(), table->keys().end(), from_file);
  const std::string field = "auth.api_keys.keys";
  switch (req.method()) {
    case http::verb::put: {
      auto body = read_object(req, "(body)");
      if (auto* error = std::get_if<Response>(&body)) {
        return std::move(*error);
      }
      const ordered_json& object = std::get<ordered_json>(body);
      for (auto it = object.begin(); it != object.end(); ++it) {
        if (it.key() != "key" && it.key() != "tier") {
          return field_error(req, "unknown field", "(body)." + it.key());
        }
      }
      const auto key = object.find("key");
      if (key == object.end() || !key->is_string() || !usable_key(key->get<std::string>())) {
        return field_error(req, "must be a string of 16-512 visible ASCII characters",
                           "(body).key");
      }
      const auto tier = object.find("tier");
      if (tier != object.end() && !tier->is_null() &&
          (!tier->is_string() || tier->get<std::string>().empty())) {
        return field_error(req, "must be a non-empty string or null", "(body).tier");
      }
      if (user_in_file) {
        return field_error(req, "this user's keys are in keys_file: change the file", field,
                           http::status::conflict);
      }
      const std::string hash = auth::ApiKeyTable::sha256_hex(key->get<std::string>());
      if (const auth::ApiKey* owner = table ? table->find(key->get<std::string>()) : nullptr;
          owner != nullptr && owner->user != user) {
        return field_error(req, "this key is another user's", field, http::status::conflict);
      }
      ordered_json next = context_.current().json();
      ordered_json& api_keys = next["auth"]["api_keys"];
      ordered_json kept = ordered_json::array();
      for (const auto& entry : api_keys.value("keys", ordered_json::array())) {
        if (entry.value("user", "") != user) {
          kept.push_back(entry);
        }
      }
      ordered_json added = {{"sha256", hash}, {"user", user}};
      if (tier != object.end() && tier->is_string()) {
        added["tier"] = *tier;
      }
      kept.push_back(std::move(added));
      api_keys["keys"] = std::move(kept);
      return apply(call, std::move(next), "auth_keys", user, [&](const config::Config& after) {
        const json keys = admin_keys_of(after, user);
        return keys.empty() ? json(nullptr) : keys.front();
      });
    }
    case http::verb::delete_: {
      if (admin_keys_of(c, user).empty()) {
        return user_in_file ? field_error(req, "this user's keys are in keys_file: change the file",
                                          field, http::status::conflict)
                            : not_found(req, "no API key for this user");
      }
      ordered_json next = context_.current().json();
      ordered_json& keys = next["auth"]["api_keys"]["keys"];
      ordered_json kept = ordered_json::array();
      for (const auto& entry : keys) {
        if (entry.value("user", "") != user) {
          kept.push_back(entry);
        }
      }
      keys = std::move(kept);
      return apply(call, std::move(next), "auth_keys", user, [&](const config::Config& after) {
        const json left = admin_keys_of(after, user);
        return left.empty() ? json(nullptr) : left.front();
      });
    }
    default:
      return method_not_allowed(req, "PUT, DELETE");
  }
}

}  // namespace sluice::admin
