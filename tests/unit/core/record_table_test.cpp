// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/record_table.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <unordered_map>

namespace sluice::core {
namespace {

void put(std::byte* record, std::uint64_t value) {
  std::memcpy(record, &value, sizeof value);
}
/// splitmix64's finaliser: the table expects keys that are already good hashes.
std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return (x ^ (x >> 31U)) | 1U;
}
std::uint64_t get(const std::byte* record) {
  std::uint64_t v = 0;
  std::memcpy(&v, record, sizeof v);
  return v;
}

TEST(RecordTableTest, FindsWhatWasInsertedAndNothingElse) {
  RecordTable table(24, 1000);
  EXPECT_EQ(table.find(42), nullptr);
  put(table.insert(42), 4200);
  put(table.insert(7), 700);
  ASSERT_NE(table.find(42), nullptr);
  EXPECT_EQ(get(table.find(42)), 4200U);
  EXPECT_EQ(get(table.find(7)), 700U);
  EXPECT_EQ(table.find(8), nullptr);
  EXPECT_EQ(table.size(), 2U);
}

TEST(RecordTableTest, RoundsRecordsUpToEightBytesAndZeroFillsThem) {
  RecordTable table(13, 10);
  EXPECT_EQ(table.record_bytes(), 16U);
  const std::byte* r = table.insert(99);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(r[i], std::byte{0});
  }
}

TEST(RecordTableTest, NeverGrowsBeyondWhatMaxEntriesNeeds) {
  RecordTable table(8, 1000);
  for (std::uint64_t k = 1; k <= 1000; ++k) {
    put(table.insert(k * 0x9e3779b97f4a7c15ULL), k);
  }
  EXPECT_EQ(table.size(), 1000U);
  EXPECT_LE(table.capacity(), 1251U + 1);  // load stays <= 0.8 at the cap, and no more slots
  EXPECT_GE(table.capacity() * 4, table.size() * 5);
  EXPECT_EQ(table.memory_bytes(), table.capacity() * 16);  // 8-byte key + 8-byte record
}

// Keys that all share a home slot: long probe runs, wrap-around and backward shifts.
TEST(RecordTableTest, EraseKeepsCollidingRunsFindable) {
  RecordTable table(8, 64);
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 1; i <= 40; ++i) {
    keys.push_back((0xfULL << 60U) | i);  // same high bits: same home slot
    put(table.insert(keys.back()), i);
  }
  for (std::size_t i = 0; i < keys.size(); i += 3) {
    ASSERT_TRUE(table.erase(keys[i]));
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::byte* r = table.find(keys[i]);
    if (i % 3 == 0) {
      EXPECT_EQ(r, nullptr) << i;
    } else {
      ASSERT_NE(r, nullptr) << i;
      EXPECT_EQ(get(r), i + 1);
    }
  }
}

TEST(RecordTableTest, MatchesAReferenceMapUnderRandomOperations) {
  std::mt19937_64 rng(12345);  // seeded: the same sequence every run
  RecordTable table(16, 5000);
  std::unordered_map<std::uint64_t, std::uint64_t> reference;
  for (int op = 0; op < 200000; ++op) {
    // A key space just above the cap keeps the table near full: long runs and wrap-around.
    const std::uint64_t key = mix((rng() % 6000) + 1);
    std::byte* r = table.find(key);
    ASSERT_EQ(r != nullptr, reference.count(key) == 1) << "op " << op;
    if (r != nullptr) {
      ASSERT_EQ(get(r), reference[key]);
      if (rng() % 2 == 0) {
        ASSERT_TRUE(table.erase(key));
        ASSERT_FALSE(table.erase(key));
        reference.erase(key);
      }
    } else if (table.size() < table.max_entries()) {
      put(table.insert(key), op);
      reference[key] = static_cast<std::uint64_t>(op);
    }
  }
  EXPECT_EQ(table.size(), reference.size());
  std::size_t found = 0;
  for (std::size_t s = 0; s < table.capacity(); ++s) {
    if (table.key_at(s) != 0) {
      ASSERT_EQ(reference.at(table.key_at(s)), get(table.record_at(s)));
      ++found;
    }
  }
  EXPECT_EQ(found, reference.size());
}

TEST(RecordTableTest, EraseIfRemovesEveryMatchAndClearFreesAll) {
  RecordTable table(8, 500);
  for (std::uint64_t k = 1; k <= 500; ++k) {
    put(table.insert(k * 0x9e3779b97f4a7c15ULL), k);
  }
  const std::size_t erased =
      table.erase_if([](std::uint64_t, std::byte* r) { return get(r) % 2 == 0; });
  EXPECT_EQ(erased, 250U);
  for (std::uint64_t k = 1; k <= 500; ++k) {
    EXPECT_EQ(table.find(k * 0x9e3779b97f4a7c15ULL) != nullptr, k % 2 == 1) << k;
  }
  table.clear();
  EXPECT_EQ(table.size(), 0U);
  EXPECT_EQ(table.memory_bytes(), 0U);
  EXPECT_EQ(table.find(1), nullptr);
  put(table.insert(5), 5);
  EXPECT_EQ(get(table.find(5)), 5U);
}

}  // namespace
}  // namespace sluice::core
