// SPDX-License-Identifier: Apache-2.0
// http2::SessionMemory (docs/http2.md, "Memory per connection"): libnghttp2's frame buffer, and
// the stream map's table and HPACK rings it makes with the session, in pages of their own, of
// which an idle session has only the ones it wrote resident, handed back when the session frees
// them; every other block from malloc.
#include "gateway/http2/session_memory.hpp"

#include <fcntl.h>
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

#include "tests/unit/http2/zero_page_probe.hpp"

namespace sluice::http2 {
namespace {

/// How many of the pages of [p, p + size) hold resident memory of this process: present and
/// mapped by it alone (/proc/self/pagemap). On most kernels a page only read maps the shared
/// zero page, which is present but costs no resident memory of the process
/// (zero_page_probe.hpp).
std::size_t resident_pages(void* p, std::size_t size) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // (Paged blocks start on a page: the slots are whole pages of a mapping.)
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % page, 0U);
  const std::size_t pages = (size + page - 1) / page;
  std::vector<std::uint64_t> entries(pages);
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  const auto want = static_cast<ssize_t>(pages * sizeof(std::uint64_t));
  const ssize_t got = ::pread(
      fd, entries.data(), static_cast<std::size_t>(want),
      static_cast<off_t>(reinterpret_cast<std::uintptr_t>(p) / page * sizeof(std::uint64_t)));
  ::close(fd);
  if (got != want) {
    ADD_FAILURE() << "pagemap read failed";
    return pages;
  }
  std::size_t n = 0;
  for (const std::uint64_t e : entries) {
    n += ((e >> 63U) & 1U) != 0 && ((e >> 56U) & 1U) != 0 ? 1 : 0;
  }
  return n;
}

/// A server session (no callbacks) allocating from `memory`, made as http2::Connection makes
/// its own; null if nghttp2 failed.
nghttp2_session* server_session(SessionMemory& memory) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session* session = nullptr;
  const int made = nghttp2_session_server_new3(&session, callbacks, nullptr, nullptr, memory.mem());
  nghttp2_session_callbacks_del(callbacks);
  memory.session_made();
  return made == 0 ? session : nullptr;
}

TEST(SessionMemoryTest, ASessionsFrameBufferIsPagedAndGoesBackWhenTheSessionEnds) {
  SessionMemory memory;
  nghttp2_session* session = server_session(memory);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(memory.paged(SessionMemory::Pool::kFrame), 1U);  // the 16 KiB frame buffer
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
  std::array<void*, 10> blocks{};
  for (void*& b : blocks) {
    b = mem->malloc(std::size_t{16} * 1024U, mem->mem_user_data);
    ASSERT_NE(b, nullptr);
    std::memset(b, 1, std::size_t{16} * 1024U);
  }
  EXPECT_EQ(memory.paged(), 8U);
  for (void* b : blocks) {
    mem->free(b, mem->mem_user_data);
  }
  EXPECT_EQ(memory.paged(), 0U);
}

/// Bytes a client sends to open one stream (the preface, SETTINGS and a HEADERS frame whose
/// fields go into the server's HPACK table), made by an nghttp2 client session on malloc.
std::string client_request_bytes() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session* client = nullptr;
  EXPECT_EQ(nghttp2_session_client_new(&client, callbacks, nullptr), 0);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0);
  auto field = [](std::string_view name, std::string_view value) {
    // NOLINTBEGIN(cppcoreguidelines-pro-type-const-cast): nghttp2_nv's fields are not const
    return nghttp2_nv{
        const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(name.data())),
        const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(value.data())), name.size(),
        value.size(), NGHTTP2_NV_FLAG_NONE};
    // NOLINTEND(cppcoreguidelines-pro-type-const-cast)
  };
  const std::array<nghttp2_nv, 5> fields{
      field(":method", "GET"), field(":scheme", "https"), field(":authority", "example.test"),
      field(":path", "/index"), field("x-request-tag", "a value worth indexing")};
  EXPECT_GT(nghttp2_submit_request(client, nullptr, fields.data(), fields.size(), nullptr, nullptr),
            0);
  std::string bytes;
  for (;;) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(client, &data);
    if (n <= 0) {
      break;
    }
    bytes.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  nghttp2_session_del(client);
  return bytes;
}

TEST(SessionMemoryTest, TheTablesMadeWithTheSessionStayUntouchedUntilAStreamComes) {
  SessionMemory memory;
  nghttp2_session* session = server_session(memory);
  ASSERT_NE(session, nullptr);
  // The stream map's table and the two HPACK rings, beside the frame buffer.
  EXPECT_EQ(memory.paged(SessionMemory::Pool::kTable), 1U);
  EXPECT_EQ(memory.paged(SessionMemory::Pool::kRing), 2U);
  ASSERT_EQ(nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0), 0);
  const std::uint8_t* data = nullptr;
  EXPECT_GT(nghttp2_session_mem_send(session, &data), 0);
  // An idle session: of its paged blocks only the frame buffer's first page was written.
  if (reads_map_the_zero_page()) {
    EXPECT_EQ(memory.resident_pages(), memory.frame_buffer_resident_pages());
  } else {
    // This kernel gives a private page at the first read: the one page of the table and rings
    // that nghttp2 reads before any stream is resident too (docs/http2.md).
    EXPECT_LE(memory.resident_pages(), memory.frame_buffer_resident_pages() + 1);
  }
  // A stream (in the map) whose fields are indexed (in the decoder's ring) writes the others.
  const std::string request = client_request_bytes();
  ASSERT_EQ(nghttp2_session_mem_recv(session, reinterpret_cast<const std::uint8_t*>(request.data()),
                                     request.size()),
            static_cast<ssize_t>(request.size()));
  EXPECT_GE(memory.resident_pages(), memory.frame_buffer_resident_pages() + 2);
  // Made sessions take no more from the table and ring pools: what nghttp2 allocates that size
  // per stream or frame comes from malloc.
  nghttp2_mem* mem = memory.mem();
  void* later = mem->malloc(1000, mem->mem_user_data);
  EXPECT_EQ(memory.paged(SessionMemory::Pool::kRing), 2U);
  mem->free(later, mem->mem_user_data);
  const std::size_t free_tables = SessionMemory::pool_free_slots(SessionMemory::Pool::kTable);
  const std::size_t free_rings = SessionMemory::pool_free_slots(SessionMemory::Pool::kRing);
  nghttp2_session_del(session);
  EXPECT_EQ(memory.paged(), 0U);
  EXPECT_EQ(SessionMemory::pool_free_slots(SessionMemory::Pool::kTable), free_tables + 1);
  EXPECT_EQ(SessionMemory::pool_free_slots(SessionMemory::Pool::kRing), free_rings + 2);
}

TEST(SessionMemoryTest, QuarterPageSlotsShareAPageGivenBackWhenAllAreFreeAndReadZeroWhenCalloced) {
  SessionMemory memory;  // (still being made: the ring pool serves)
  nghttp2_mem* mem = memory.mem();
  void* user = mem->mem_user_data;
  std::array<char*, 4> rings{};
  for (char*& ring : rings) {
    ring = static_cast<char*>(mem->malloc(SessionMemory::kRingMax, user));
    ASSERT_NE(ring, nullptr);
  }
  EXPECT_EQ(memory.paged(SessionMemory::Pool::kRing), 4U);
  EXPECT_EQ(memory.resident_pages(), 0U);  // taken, not written
  std::memset(rings[0], 'x', SessionMemory::kRingMax);
  EXPECT_GE(memory.resident_pages(), 1U);
  // Freed while other slots of its page are taken: the page stays, and the slot's next block,
  // if calloc'ed, is zeroed.
  mem->free(rings[0], user);
  auto* zeroed = static_cast<unsigned char*>(mem->calloc(1, SessionMemory::kRingMax, user));
  ASSERT_NE(zeroed, nullptr);
  EXPECT_TRUE(std::all_of(zeroed, zeroed + SessionMemory::kRingMax,
                          [](unsigned char c) { return c == 0; }));
  std::memset(zeroed, 'y', 16);
  mem->free(zeroed, user);
  for (std::size_t i = 1; i < rings.size(); ++i) {
    mem->free(rings[i], user);
  }
  EXPECT_EQ(memory.paged(), 0U);
  if (reinterpret_cast<std::uintptr_t>(zeroed) % 4096U == 0) {  // (its page held rings[1..3])
    EXPECT_EQ(resident_pages(zeroed, 4096), 0U);                // given back with the last slot
  }
  // A table block is a whole page of its own, zero when calloc'ed.
  auto* table = static_cast<unsigned char*>(mem->calloc(256, 16, user));
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(memory.paged(SessionMemory::Pool::kTable), 1U);
  EXPECT_EQ(resident_pages(table, 4096), 0U);
  EXPECT_EQ(table[4095], 0U);
  mem->free(table, user);
}

}  // namespace
}  // namespace sluice::http2
