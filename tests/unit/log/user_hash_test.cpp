// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/user_hash.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace sluice::log {
namespace {

config::AccessLogConfig naming(std::string variable) {
  config::AccessLogConfig c;
  c.user_hash_key_env = std::move(variable);
  return c;
}

TEST(UserHashTest, NoVariableConfiguredMeansARandomKeyAndNoError) {
  std::string error = "stale";
  EXPECT_FALSE(user_hash_from_env(config::AccessLogConfig{}, error));
  EXPECT_TRUE(error.empty());
}

TEST(UserHashTest, TheLabelIsTheLow48BitsInHex) {
  const auto label = user_label(0x0123456789abcdefULL);
  EXPECT_EQ(std::string_view(label.data(), label.size()), "456789abcdef");
  const auto zero = user_label(0);
  EXPECT_EQ(std::string_view(zero.data(), zero.size()), "000000000000");
}

TEST(UserHashTest, TheVariablesSecretKeysTheHash) {
  ::setenv("SLUICE_TEST_USER_HASH", "0123456789abcdef-secret", 1);
  std::string error;
  const auto hash = user_hash_from_env(naming("SLUICE_TEST_USER_HASH"), error);
  ASSERT_TRUE(hash) << error;
  EXPECT_EQ((*hash)("user-1"), core::KeyedHash::from_secret("0123456789abcdef-secret")("user-1"));
  ::unsetenv("SLUICE_TEST_USER_HASH");
}

TEST(UserHashTest, AnUnsetEmptyOrShortSecretIsAnErrorNamingTheVariable) {
  std::string error;
  ::unsetenv("SLUICE_TEST_USER_HASH");
  EXPECT_FALSE(user_hash_from_env(naming("SLUICE_TEST_USER_HASH"), error));
  EXPECT_NE(error.find("SLUICE_TEST_USER_HASH"), std::string::npos);
  ::setenv("SLUICE_TEST_USER_HASH", "", 1);
  EXPECT_FALSE(user_hash_from_env(naming("SLUICE_TEST_USER_HASH"), error));
  EXPECT_NE(error.find("not set"), std::string::npos);
  ::setenv("SLUICE_TEST_USER_HASH", "short", 1);
  EXPECT_FALSE(user_hash_from_env(naming("SLUICE_TEST_USER_HASH"), error));
  EXPECT_NE(error.find("at least 16"), std::string::npos);
  ::unsetenv("SLUICE_TEST_USER_HASH");
}

}  // namespace
}  // namespace sluice::log
