// SPDX-License-Identifier: Apache-2.0
// http2::SessionMemory (docs/http2.md, "Memory per connection"): libnghttp2's frame buffer in
// pages of its own, of which an idle session has only the ones it wrote resident, handed back
// when the session frees it; every other block from malloc.
#include "gateway/http2/session_memory.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http2 {
namespace {

/// How many of the pages of [p, p + size) are resident (mincore).
std::size_t resident_pages(void* p, std::size_t size) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // (Paged blocks start on a page: the slots are whole pages of a mapping.)
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % page, 0U);
  const std::size_t pages = (size + page - 1) / page;
  std::vector<unsigned char> in_core(pages);
  if (::mincore(p, pages * page, in_core.data()) != 0) {
    ADD_FAILURE() << "mincore failed";
    return pages;
  }
  std::size_t n = 0;
  for (const unsigned char c : in_core) {
    n += c & 1U;
  }
  return n;
}

TEST(SessionMemoryTest, ASessionsFrameBufferIsPagedAndGoesBackWhenTheSessionEnds) {
  SessionMemory memory;
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session* session = nullptr;
  ASSERT_EQ(nghttp2_session_server_new3(&session, callbacks, nullptr, nullptr, memory.mem()), 0);
  nghttp2_session_callbacks_del(callbacks);
  EXPECT_EQ(memory.paged(), 1U);  // the 16 KiB frame buffer, and nothing else
  EXPECT_GE(SessionMemory::pool_slots(), 1U);
  // The session works as with malloc: SETTINGS leave.
  ASSERT_EQ(nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0), 0);
  const std::uint8_t* data = nullptr;
  EXPECT_GT(nghttp2_session_mem_send(session, &data), 0);
  const std::size_t free_while_held = SessionMemory::pool_free_slots();
  nghttp2_session_del(session);
  EXPECT_EQ(memory.paged(), 0U);
  EXPECT_EQ(SessionMemory::pool_free_slots(), free_while_held + 1);
}

TEST(SessionMemoryTest, OnlyThePagesWrittenAreResident) {
  SessionMemory memory;
  nghttp2_mem* mem = memory.mem();
  auto* block = static_cast<char*>(mem->malloc(16394, mem->mem_user_data));
  ASSERT_NE(block, nullptr);
  ASSERT_EQ(memory.paged(), 1U);
  EXPECT_EQ(resident_pages(block, 16394), 0U);  // taken, not yet written
  std::memset(block, 'x', 100);                 // what an idle connection's frames write
  EXPECT_EQ(resident_pages(block, 16394), 1U);
  std::memset(block, 'y', 16394);
  EXPECT_GE(resident_pages(block, 16394), 4U);
  mem->free(block, mem->mem_user_data);
  EXPECT_EQ(resident_pages(block, 16394), 0U);  // handed back to the kernel
  // The next block in that slot starts from zero pages.
  auto* again = static_cast<char*>(mem->malloc(16394, mem->mem_user_data));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again[0], 0);
  EXPECT_EQ(again[16393], 0);
  mem->free(again, mem->mem_user_data);
}

TEST(SessionMemoryTest, SmallAndLargeBlocksComeFromMallocAndReallocKeepsTheBytes) {
  SessionMemory memory;
  nghttp2_mem* mem = memory.mem();
  void* user = mem->mem_user_data;
  void* small = mem->malloc(64, user);
  void* large = mem->malloc(std::size_t{64} * 1024U, user);
  EXPECT_EQ(memory.paged(), 0U);
  auto* zeroed = static_cast<unsigned char*>(mem->calloc(16, 1024, user));  // paged, zero
  ASSERT_NE(zeroed, nullptr);
  EXPECT_EQ(memory.paged(), 1U);
  EXPECT_EQ(zeroed[0], 0U);
  EXPECT_EQ(zeroed[16383], 0U);
  const std::string_view text = "frame";
  std::copy(text.begin(), text.end(), zeroed);
  // Within the slot: the same block. Past it: moved to malloc with its bytes, the slot freed.
  EXPECT_EQ(mem->realloc(zeroed, SessionMemory::kPagedMax, user), zeroed);
  auto* moved = static_cast<char*>(mem->realloc(zeroed, std::size_t{40} * 1024U, user));
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(std::string_view(moved, text.size()), text);
  EXPECT_EQ(memory.paged(), 0U);
  // A malloc'ed block grown into the paged sizes stays a malloc'ed block.
  void* grown = mem->realloc(small, std::size_t{12} * 1024U, user);
  EXPECT_EQ(memory.paged(), 0U);
  mem->free(grown, user);
  mem->free(large, user);
  mem->free(moved, user);
  mem->free(nullptr, user);
}

TEST(SessionMemoryTest, MoreConcurrentPagedBlocksThanASessionKeepsGoToMalloc) {
  SessionMemory memory;
  nghttp2_mem* mem = memory.mem();
  std::array<void*, 6> blocks{};
  for (void*& b : blocks) {
    b = mem->malloc(std::size_t{16} * 1024U, mem->mem_user_data);
    ASSERT_NE(b, nullptr);
    std::memset(b, 1, std::size_t{16} * 1024U);
  }
  EXPECT_EQ(memory.paged(), 4U);
  for (void* b : blocks) {
    mem->free(b, mem->mem_user_data);
  }
  EXPECT_EQ(memory.paged(), 0U);
}

}  // namespace
}  // namespace sluice::http2
