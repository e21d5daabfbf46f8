// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/tls_policy.hpp"

#include <openssl/err.h>

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "gateway/tls/openssl_error.hpp"

namespace sluice::tls {
namespace {

std::vector<std::string_view> split(std::string_view list) {
  std::vector<std::string_view> names;
  while (!list.empty()) {
    const auto colon = list.find(':');
    names.push_back(list.substr(0, colon));
    list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
  }
  return names;
}

using CtxPtr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

CtxPtr scratch_context() {
  return {SSL_CTX_new(TLS_server_method()), &SSL_CTX_free};
}

/// The first element of the TLS 1.2 cipher list `list` that selects nothing on its own (a
/// misspelt name, an unknown alias, an empty one); nothing when every one selects something.
/// Elements that only remove or move ciphers (`!`, `-`, `+`, `@STRENGTH`) pass: one that matches
/// nothing changes nothing (`!MD5` where no MD5 suite is built in).
std::optional<std::string> unknown_cipher(std::string_view list) {
  const CtxPtr scratch = scratch_context();
  for (std::string_view element : split(list)) {
    if (!element.empty() &&
        std::string_view("!-+@").find(element.front()) != std::string_view::npos) {
      continue;
    }
    ERR_clear_error();
    if (element.empty() ||
        SSL_CTX_set_cipher_list(scratch.get(), std::string(element).c_str()) != 1) {
      ERR_clear_error();
      return std::string(element);
    }
  }
  return std::nullopt;
}

/// The first name of the TLS 1.3 suite list `list` that is not a suite OpenSSL implements.
std::optional<std::string> unknown_suite(std::string_view list) {
  const CtxPtr scratch = scratch_context();
  for (std::string_view name : split(list)) {
    ERR_clear_error();
    const std::string text(name);
    bool known = !text.empty() && SSL_CTX_set_ciphersuites(scratch.get(), text.c_str()) == 1;
    if (known) {  // OpenSSL 3 skips an unknown suite: it must be the one now configured
      known = false;
      const STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(scratch.get());
      for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
        const SSL_CIPHER* cipher = sk_SSL_CIPHER_value(ciphers, i);
        known = known || text == SSL_CIPHER_get_name(cipher);  // (1.2 names never start TLS_)
      }
    }
    if (!known) {
      ERR_clear_error();
      return text;
    }
  }
  return std::nullopt;
}

/// The first name of the group list `list` that OpenSSL does not know.
std::optional<std::string> unknown_group(std::string_view list) {
  const CtxPtr scratch = scratch_context();
  for (std::string_view name : split(list)) {
    ERR_clear_error();
    const std::string text(name);
    if (text.empty() || SSL_CTX_set1_groups_list(scratch.get(), text.c_str()) != 1) {
      ERR_clear_error();
      return text;
    }
  }
  return std::nullopt;
}

}  // namespace

bool apply_policy(SSL_CTX* ctx, const config::ListenerTlsConfig& config, const std::string& path,
                  std::string& error) {
  const struct {
    const char* field;
    const std::string& list;
    std::optional<std::string> (*unknown)(std::string_view);
    const char* kind;
  } lists[] = {{"ciphers", config.ciphers, &unknown_cipher, "cipher"},
               {"ciphersuites", config.ciphersuites, &unknown_suite, "TLS 1.3 suite"},
               {"groups", config.groups, &unknown_group, "group"}};
  for (const auto& list : lists) {
    if (const auto name = list.unknown(list.list)) {
      error = path + "." + list.field + ": OpenSSL knows no " + list.kind + " \"" + *name + "\"";
      return false;
    }
  }
  ERR_clear_error();
  if (SSL_CTX_set_cipher_list(ctx, config.ciphers.c_str()) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, config.ciphersuites.c_str()) != 1 ||
      SSL_CTX_set1_groups_list(ctx, config.groups.c_str()) != 1) {
    error = path + ": the cipher, suite or group lists are refused: " + openssl_reason();
    return false;
  }
  return true;
}

}  // namespace sluice::tls
