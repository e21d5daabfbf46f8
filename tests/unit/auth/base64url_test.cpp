// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/base64url.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::auth {
namespace {

TEST(Base64UrlTest, DecodesTheVectorsOfRfc4648WithoutPadding) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(decode_base64url(encoded), std::string(plain)) << encoded;
    EXPECT_EQ(encode_base64url(plain), encoded) << plain;
  }
}

TEST(Base64UrlTest, UsesTheUrlAlphabetBothWays) {
  const std::string bytes("\xfb\xff\xbf", 3);  // standard base64: "+/+/"
  EXPECT_EQ(encode_base64url(bytes), "-_-_");
  EXPECT_EQ(decode_base64url("-_-_"), bytes);
  EXPECT_FALSE(decode_base64url("+/+/"));
}

TEST(Base64UrlTest, RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes.push_back(static_cast<char>(i * 37 + 11));
    EXPECT_EQ(decode_base64url(encode_base64url(bytes)), bytes) << i;
  }
}

TEST(Base64UrlTest, RefusesWhatIsNotCanonicalUnpaddedBase64Url) {
  EXPECT_FALSE(decode_base64url("Zg=="));    // padding
  EXPECT_FALSE(decode_base64url("Zm9v\n"));  // whitespace
  EXPECT_FALSE(decode_base64url("Zm9 v"));
  EXPECT_FALSE(decode_base64url("Z"));  // one character over
  EXPECT_FALSE(decode_base64url("Zm9vY"));
  EXPECT_FALSE(decode_base64url("Zh"));  // bits set past the last byte: "Zg" is the one spelling
  EXPECT_FALSE(decode_base64url("Zm9"));
  EXPECT_TRUE(decode_base64url("Zm8"));
  EXPECT_FALSE(decode_base64url(std::string("Zm\0v", 4)));
}

}  // namespace
}  // namespace sluice::auth
