// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/api_key_table.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::auth {
namespace {

const std::string kHashOfKey1 = ApiKeyTable::sha256_hex("secret-key-1");

std::string keys_file(const std::string& entries) {
  return R"({"keys": [)" + entries + "]}";
}

TEST(ApiKeyTableTest, TheHashIsTheSha256OfTheKeyInLowerCaseHex) {
  EXPECT_EQ(ApiKeyTable::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
}

TEST(ApiKeyTableTest, AKeyIsFoundByItsClearTextAndNamesItsUserAndTier) {
  std::string error;
  const auto table = ApiKeyTable::parse(
      keys_file(R"({"sha256": ")" + kHashOfKey1 + R"(", "user": "robot", "tier": "gold"})"), error);
  ASSERT_TRUE(table) << error;
  const ApiKey* found = table->find("secret-key-1");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->user, "robot");
  EXPECT_EQ(found->tier, "gold");
  EXPECT_EQ(table->find("secret-key-2"), nullptr);
  EXPECT_EQ(table->find(kHashOfKey1), nullptr);  // the hash is not a key
}

TEST(ApiKeyTableTest, ABrokenFileIsNamedByItsEntry) {
  std::string error;
  EXPECT_FALSE(ApiKeyTable::parse("[]", error));
  EXPECT_EQ(error, "not a JSON object");
  EXPECT_FALSE(ApiKeyTable::parse(R"({"keys": {}})", error));
  EXPECT_EQ(error, R"(needs "keys", an array)");
  EXPECT_FALSE(ApiKeyTable::parse(keys_file(R"({"sha256": "ABC", "user": "x"})"), error));
  EXPECT_EQ(error, "keys[0].sha256: must be 64 lower-case hex digits");
  EXPECT_FALSE(ApiKeyTable::parse(
      keys_file(R"({"sha256": ")" + std::string(64, 'F') + R"(", "user": "x"})"), error));
  EXPECT_EQ(error, "keys[0].sha256: must be 64 lower-case hex digits");
  EXPECT_FALSE(
      ApiKeyTable::parse(keys_file(R"({"sha256": ")" + kHashOfKey1 + R"(", "user": ""})"), error));
  EXPECT_EQ(error, "keys[0].user: must be a non-empty string");
  const std::string entry = R"({"sha256": ")" + kHashOfKey1 + R"(", "user": "a"})";
  EXPECT_FALSE(ApiKeyTable::parse(keys_file(entry + "," + entry), error));
  EXPECT_EQ(error, "keys[1].sha256: the same key is listed twice");
}

TEST(ApiKeyTableTest, ChangesMakeNewTablesAndTheFileHoldsOnlyHashes) {
  const ApiKeyTable empty;
  const ApiKeyTable one = empty.with_key("robot", "secret-key-1", "gold");
  const ApiKeyTable rotated = one.with_key("robot", "secret-key-2", "");
  EXPECT_EQ(empty.find("secret-key-1"), nullptr);
  ASSERT_NE(one.find("secret-key-1"), nullptr);
  // A user's new key replaces the old one.
  EXPECT_EQ(rotated.find("secret-key-1"), nullptr);
  ASSERT_NE(rotated.find("secret-key-2"), nullptr);
  EXPECT_EQ(rotated.keys().size(), 1U);
  const std::string dumped = rotated.dump();
  EXPECT_EQ(dumped.find("secret-key"), std::string::npos);
  std::string error;
  const auto read = ApiKeyTable::parse(dumped, error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(read->keys(), rotated.keys());
  EXPECT_FALSE(rotated.without_user("nobody"));
  const auto none = rotated.without_user("robot");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->find("secret-key-2"), nullptr);
}

}  // namespace
}  // namespace sluice::auth
