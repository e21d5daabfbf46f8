// SPDX-License-Identifier: Apache-2.0
// The real binary's heap allocator (docs/decisions/0028-mimalloc.md): a release build runs on
// mimalloc and says so at start, checked inside the process (a block from malloc lies in
// mimalloc's heap), not assumed from the link line; a sanitizer build runs on glibc's malloc
// under the sanitizer and says that.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/sluice_process.hpp"

namespace sluice::testing {
namespace {

TEST(AllocatorTest, TheBinaryNamesTheAllocatorItRunsOn) {
  SluiceProcess gateway(minimal_gateway_config({"127.0.0.1:9"}));
#if SLUICE_EXPECT_MIMALLOC
  const std::string expected = "allocator name=mimalloc version=2.";
#else
  const std::string expected = "allocator name=glibc";
#endif
  ASSERT_TRUE(gateway.process().wait_for_line(expected)) << gateway.process().output();
  const std::string output = gateway.process().output();
  const std::string line = output.substr(output.find(expected));
  const std::string first_line = line.substr(0, line.find('\n'));
#if SLUICE_EXPECT_MIMALLOC
  EXPECT_NE(first_line.find(" active=true"), std::string::npos) << first_line;
#endif
  EXPECT_EQ(gateway.process().count_lines("allocator name="), 1U);
}

}  // namespace
}  // namespace sluice::testing
