// SPDX-License-Identifier: Apache-2.0
// Reading the replies of one hybrid exchange group (docs/distributed.md, "Hybrid mode"): for
// each of 128 keys the `HINCRBY` reply (an integer) and the `HMGET` of two unsettled buckets (an
// array of a count and a nil), as RESP bytes arriving in one read. ReplyReader builds the plain
// values in place (gateway/store/redis_protocol.cpp); beside it, hiredis' own reply objects
// copied out with from_hiredis and freed, as the reader did before, on the same bytes.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <cstddef>
#include <string>

#include "gateway/store/redis_protocol.hpp"

namespace sluice::bench {
namespace {

constexpr std::size_t kGroupKeys = 128;

std::string group_replies() {
  std::string bytes;
  for (std::size_t key = 0; key < kGroupKeys; ++key) {
    bytes += ":" + std::to_string(40 + key) + "\r\n";
    bytes += "*2\r\n$2\r\n17\r\n$-1\r\n";
  }
  return bytes;
}

void BM_ReplyReaderGroup(benchmark::State& state) {
  const std::string bytes = group_replies();
  store::ReplyReader reader;
  bool protocol_error = false;
  for (auto _ : state) {
    reader.feed(bytes);
    std::size_t replies = 0;
    while (auto reply = reader.next(protocol_error)) {
      benchmark::DoNotOptimize(reply->integer);
      ++replies;
    }
    benchmark::DoNotOptimize(replies);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kGroupKeys));
}
BENCHMARK(BM_ReplyReaderGroup);

void BM_HiredisObjectsCopiedGroup(benchmark::State& state) {
  const std::string bytes = group_replies();
  redisReader* reader = redisReaderCreate();
  for (auto _ : state) {
    redisReaderFeed(reader, bytes.data(), bytes.size());
    std::size_t replies = 0;
    void* raw = nullptr;
    while (redisReaderGetReply(reader, &raw) == REDIS_OK && raw != nullptr) {
      store::RedisReply reply = store::from_hiredis(*static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      benchmark::DoNotOptimize(reply.integer);
      ++replies;
    }
    benchmark::DoNotOptimize(replies);
  }
  redisReaderFree(reader);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kGroupKeys));
}
BENCHMARK(BM_HiredisObjectsCopiedGroup);

}  // namespace
}  // namespace sluice::bench
