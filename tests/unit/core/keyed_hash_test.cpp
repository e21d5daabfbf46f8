// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/keyed_hash.hpp"

#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <cstdint>
#include <string>

namespace sluice::core {
namespace {

KeyedHash::Key sequential_key() {
  KeyedHash::Key key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint8_t>(i);
  }
  return key;
}

std::uint64_t le_word(const KeyedHash::Key& key, std::size_t offset) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    v |= std::uint64_t{key[offset + i]} << (8 * i);
  }
  return v;
}

/// SipHash-c-d computed by OpenSSL's EVP_MAC "SIPHASH", an independent implementation.
std::uint64_t openssl_siphash(const KeyedHash::Key& key, const std::string& data, unsigned c_rounds,
                              unsigned d_rounds) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr);
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  std::size_t size = 8;
  std::array<OSSL_PARAM, 4> params = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                                      OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_C_ROUNDS, &c_rounds),
                                      OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_D_ROUNDS, &d_rounds),
                                      OSSL_PARAM_construct_end()};
  EXPECT_EQ(EVP_MAC_init(ctx, key.data(), key.size(), params.data()), 1);
  EXPECT_EQ(EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()),
            1);
  std::array<unsigned char, 8> out{};
  std::size_t out_len = 0;
  EXPECT_EQ(EVP_MAC_final(ctx, out.data(), &out_len, out.size()), 1);
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    v |= std::uint64_t{out[i]} << (8 * i);  // SipHash output bytes are little-endian
  }
  return v;
}

std::string sequential_message(std::size_t length) {
  std::string m(length, '\0');
  for (std::size_t i = 0; i < length; ++i) {
    m[i] = static_cast<char>(i);
  }
  return m;
}

TEST(KeyedHashTest, MatchesThePaperVectorsForSipHash24) {
  // SipHash paper, appendix A: key 00 01 .. 0f; messages 00 01 .. (n-1).
  const auto key = sequential_key();
  const auto k0 = le_word(key, 0);
  const auto k1 = le_word(key, 8);
  EXPECT_EQ((detail::siphash<2, 4>(k0, k1, "")), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ((detail::siphash<2, 4>(k0, k1, sequential_message(15))), 0xa129ca6149be45e5ULL);
}

TEST(KeyedHashTest, AgreesWithOpenSslForEveryLengthUpTo64) {
  KeyedHash::Key key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint8_t>(0xa5 ^ (i * 37));
  }
  const KeyedHash hash(key);
  for (std::size_t length = 0; length <= 64; ++length) {
    std::string message(length, '\0');
    for (std::size_t i = 0; i < length; ++i) {
      message[i] = static_cast<char>(i * 131 + length);
    }
    EXPECT_EQ(hash(message), openssl_siphash(key, message, 1, 3)) << "length " << length;
    EXPECT_EQ((detail::siphash<2, 4>(le_word(key, 0), le_word(key, 8), message)),
              openssl_siphash(key, message, 2, 4))
        << "length " << length;
  }
}

TEST(KeyedHashTest, DifferentKeysGiveDifferentHashes) {
  const KeyedHash a = KeyedHash::with_random_key();
  const KeyedHash b = KeyedHash::with_random_key();
  EXPECT_NE(a("user-1"), b("user-1"));  // equal only with probability 2^-64
  EXPECT_EQ(a("user-1"), a("user-1"));
}

TEST(KeyedHashTest, TheSameSecretGivesTheSameHashesEverywhere) {
  const KeyedHash a = KeyedHash::from_secret("a shared secret of replicas");
  const KeyedHash b = KeyedHash::from_secret("a shared secret of replicas");
  const KeyedHash c = KeyedHash::from_secret("a shared secret of replicaz");
  EXPECT_EQ(a("user-1"), b("user-1"));
  EXPECT_NE(a("user-1"), c("user-1"));
  // The key is SHA-256's first 16 bytes: pinned, so a release cannot silently change every
  // user hash operators have in their logs.
  KeyedHash::Key key{};
  const std::array<std::uint8_t, 16> sha256_abc{0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                                0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23};
  std::copy(sha256_abc.begin(), sha256_abc.end(), key.begin());
  EXPECT_EQ(KeyedHash::from_secret("abc")("user-1"), KeyedHash(key)("user-1"));
}

}  // namespace
}  // namespace sluice::core
