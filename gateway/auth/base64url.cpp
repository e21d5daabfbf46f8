// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/base64url.hpp"

#include <openssl/evp.h>

#include <algorithm>

namespace sluice::auth {
namespace {

/// The 6-bit value of a base64url character, or -1.
int sextet(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  if (c == '-') {
    return 62;
  }
  return c == '_' ? 63 : -1;
}

}  // namespace

std::optional<std::string> decode_base64url(std::string_view text) {
  const std::size_t tail = text.size() % 4;
  if (tail == 1 || !std::all_of(text.begin(), text.end(), [](char c) { return sextet(c) >= 0; })) {
    return std::nullopt;
  }
  // The unused low bits of the last character must be zero: 4 of them after 2 characters,
  // 2 after 3.
  if (tail != 0 && (sextet(text.back()) & (tail == 2 ? 0x0F : 0x03)) != 0) {
    return std::nullopt;
  }
  // OpenSSL decodes standard base64 in blocks of four: translate and pad, then drop what the
  // padding decoded to.
  std::string standard(text);
  std::replace(standard.begin(), standard.end(), '-', '+');
  std::replace(standard.begin(), standard.end(), '_', '/');
  const std::size_t padding = tail == 0 ? 0 : 4 - tail;
  standard.append(padding, '=');
  std::string out(standard.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(standard.data()),
                                static_cast<int>(standard.size()));
  if (n < 0 || static_cast<std::size_t>(n) < padding) {
    return std::nullopt;
  }
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

std::string encode_base64url(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') {
    out.pop_back();
  }
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

}  // namespace sluice::auth
