// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/api_key_table.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace sluice::auth {
namespace {

constexpr std::size_t kHexDigits = 64;

std::array<unsigned char, 32> sha256(std::string_view text) {
  std::array<unsigned char, 32> out{};
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &size, EVP_sha256(), nullptr);
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;  // upper case is refused: one spelling per hash
}

std::optional<std::array<unsigned char, 32>> from_hex(std::string_view hex) {
  if (hex.size() != kHexDigits) {
    return std::nullopt;
  }
  std::array<unsigned char, 32> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = hex_value(hex[2 * i]);
    const int low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out[i] = static_cast<unsigned char>(high * 16 + low);
  }
  return out;
}

const std::string* text_member(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

}  // namespace

std::size_t ApiKeyTable::DigestHash::operator()(const Digest& d) const noexcept {
  std::size_t h = 0;
  std::memcpy(&h, d.data(), sizeof h);  // SHA-256's bits are uniform already
  return h;
}

ApiKeyTable::ApiKeyTable(std::vector<ApiKey> keys) : keys_(std::move(keys)) {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (const auto digest = from_hex(keys_[i].sha256)) {
      by_digest_.emplace(*digest, i);
    }
  }
}

std::optional<ApiKeyTable> ApiKeyTable::parse(std::string_view json, std::string& error) {
  const auto document = nlohmann::json::parse(json, nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  const auto list = document.find("keys");
  if (list == document.end() || !list->is_array()) {
    error = R"(needs "keys", an array)";
    return std::nullopt;
  }
  std::vector<ApiKey> keys;
  std::unordered_map<Digest, std::size_t, DigestHash> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto& entry = (*list)[i];
    const std::string where = "keys[" + std::to_string(i) + "]";
    if (!entry.is_object()) {
      error = where + ": must be an object";
      return std::nullopt;
    }
    const std::string* hash = text_member(entry, "sha256");
    const std::string* user = text_member(entry, "user");
    const auto tier = entry.find("tier");
    const bool tier_ok = tier == entry.end() || tier->is_null() || tier->is_string();
    const auto digest = hash != nullptr ? from_hex(*hash) : std::nullopt;
    if (!digest) {
      error = where + ".sha256: must be 64 lower-case hex digits";
      return std::nullopt;
    }
    if (user == nullptr || user->empty()) {
      error = where + ".user: must be a non-empty string";
      return std::nullopt;
    }
    if (!tier_ok) {
      error = where + ".tier: must be a string";
      return std::nullopt;
    }
    if (!seen.emplace(*digest, i).second) {
      error = where + ".sha256: the same key is listed twice";
      return std::nullopt;
    }
    keys.push_back(
        {*hash, *user, tier != entry.end() && tier->is_string() ? tier->get<std::string>() : ""});
  }
  return ApiKeyTable(std::move(keys));
}

std::string ApiKeyTable::dump() const {
  nlohmann::json list = nlohmann::json::array();
  for (const ApiKey& key : keys_) {
    nlohmann::json entry{{"sha256", key.sha256}, {"user", key.user}};
    if (!key.tier.empty()) {
      entry["tier"] = key.tier;
    }
    list.push_back(std::move(entry));
  }
  return nlohmann::json{{"keys", std::move(list)}}.dump(2) + "\n";
}

const ApiKey* ApiKeyTable::find(std::string_view key) const {
  const auto it = by_digest_.find(sha256(key));
  return it == by_digest_.end() ? nullptr : &keys_[it->second];
}

ApiKeyTable ApiKeyTable::with_key(std::string_view user, std::string_view key,
                                  std::string_view tier) const {
  std::vector<ApiKey> keys;
  const std::string hash = sha256_hex(key);
  for (const ApiKey& k : keys_) {
    if (k.user != user && k.sha256 != hash) {
      keys.push_back(k);
    }
  }
  keys.push_back({hash, std::string(user), std::string(tier)});
  return ApiKeyTable(std::move(keys));
}

std::optional<ApiKeyTable> ApiKeyTable::without_user(std::string_view user) const {
  std::vector<ApiKey> keys;
  std::copy_if(keys_.begin(), keys_.end(), std::back_inserter(keys),
               [&](const ApiKey& k) { return k.user != user; });
  if (keys.size() == keys_.size()) {
    return std::nullopt;
  }
  return ApiKeyTable(std::move(keys));
}

std::string ApiKeyTable::sha256_hex(std::string_view key) {
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(kHexDigits);
  for (const unsigned char byte : sha256(key)) {
    out.push_back(kDigits[byte >> 4U]);
    out.push_back(kDigits[byte & 0xFU]);
  }
  return out;
}

}  // namespace sluice::auth
