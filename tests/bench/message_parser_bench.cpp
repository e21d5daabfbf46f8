// SPDX-License-Identifier: Apache-2.0
// A parser made and a typical request head parsed, as the data path does for every request
// (docs/architecture.md, "One request, one context"): with one parser slot, always in cache,
// and with 256 slots used in turn, as 256 busy connections each hold their own context. The
// second shows what making a parser costs once the contexts no longer fit in the cache.
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "gateway/http1/message_parser.hpp"

namespace sluice::bench {
namespace {

constexpr std::string_view kHead =
    "GET /api/v1/users/8f14e45f/orders?page=2 HTTP/1.1\r\n"
    "Host: api.example.test\r\n"
    "User-Agent: wrk/4.1.0\r\n"
    "Accept: application/json\r\n"
    "Accept-Encoding: gzip\r\n"
    "X-Api-Key: k-0001\r\n"
    "X-Request-Id: 4f1c2a\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

/// A stand-in for the rest of a request context between two parsers (the two gather lists and
/// the response parser), so that 256 slots span what 256 contexts span.
struct Slot {
  std::optional<http1::RequestParser> parser;
  std::optional<http1::ResponseParser> response;
  std::array<std::byte, 4096> rest{};
};

// Arg 0: parser slots used in turn.
void BM_RequestParserMadeAndHeadParsed(benchmark::State& state) {
  std::vector<Slot> slots(static_cast<std::size_t>(state.range(0)));
  std::size_t next = 0;
  for (auto _ : state) {
    Slot& slot = slots[next];
    next = next + 1 == slots.size() ? 0 : next + 1;
    slot.parser.emplace();
    slot.response.emplace();
    boost::beast::error_code ec;
    const std::size_t n = slot.parser->put(kHead, ec);
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(slot.parser->head().fields.size());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestParserMadeAndHeadParsed)->Arg(1)->Arg(256);

}  // namespace
}  // namespace sluice::bench
