// SPDX-License-Identifier: Apache-2.0
// The sliding window's two ring forms side by side (docs/architecture.md "Sparse key state"):
// whatever the shape, limits, arrivals and clock samples, the sparse ring the memory store keeps
// per key decides, counts and inspects exactly as the dense ring, and gives back every heap byte.
#include <chrono>
#include <vector>

#include "gateway/core/rolling_window.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/limiter/sparse_count_ring.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {
namespace {

/// Reads the input a byte at a time; zeros once it runs out.
class Bytes {
 public:
  explicit Bytes(Input input) : input_(input) {}
  [[nodiscard]] bool empty() const { return at_ >= input_.size(); }
  std::uint32_t next() { return at_ < input_.size() ? input_[at_++] : 0U; }
  std::uint32_t next16() { return next() << 8U | next(); }

 private:
  Input input_;
  std::size_t at_ = 0;
};

void check_same(const limiter::LimitDecision& d, const limiter::LimitDecision& s) {
  SLUICE_FUZZ_CHECK(d.allowed == s.allowed && d.limit == s.limit);
  SLUICE_FUZZ_CHECK(d.remaining == s.remaining);
  SLUICE_FUZZ_CHECK(d.reset == s.reset && d.retry_after == s.retry_after);
}

}  // namespace

int sliding_window(Input input) {
  Bytes bytes(input);
  // The shape: 1..3600 buckets (config's range) of 1..256 µs.
  const std::uint32_t buckets = 1 + bytes.next16() % 3600;
  const core::Duration width = std::chrono::microseconds(1 + bytes.next());
  std::uint32_t limit = bytes.next16();
  std::vector<std::uint32_t> slots(buckets);
  core::RingState<std::uint32_t> dense_state;
  limiter::CountRing dense(dense_state, slots, width);
  limiter::SparseRingState sparse_state{};
  std::size_t heap_bytes = 0;
  limiter::SparseCountRing sparse(sparse_state, buckets, width, &heap_bytes);
  core::TimePoint t{std::chrono::hours(1)};
  dense.reset(t);
  sparse.reset(t);
  while (!bytes.empty()) {
    const std::uint32_t op = bytes.next();
    const std::uint32_t arg = bytes.next();
    core::TimePoint at = t;
    switch (op % 6) {
      case 0:  // a step within a few buckets
        t += width * arg / 16;
        at = t;
        break;
      case 1:  // a long gap, up to a few windows
        t += width * buckets * arg / 64;
        at = t;
        break;
      case 2:  // a clock sample from before another thread's
        at = t - width * arg / 32;
        break;
      case 3:  // the policy's limit changes live
        limit = arg << (op / 6 % 16);
        break;
      case 4: {  // an inspection counts nothing
        const limiter::KeyState d = limiter::inspect(dense, limit, t);
        const limiter::KeyState s = limiter::inspect(sparse, limit, t);
        SLUICE_FUZZ_CHECK(d.count == s.count && d.remaining == s.remaining && d.reset == s.reset);
        continue;
      }
      default:  // a burst in the current bucket
        for (std::uint32_t i = 0; i < arg % 64; ++i) {
          check_same(limiter::decide(dense, limit, t), limiter::decide(sparse, limit, t));
        }
        continue;
    }
    check_same(limiter::decide(dense, limit, at), limiter::decide(sparse, limit, at));
    SLUICE_FUZZ_CHECK(dense.total() == sparse.total());
    SLUICE_FUZZ_CHECK(sparse.counted_buckets() <= buckets);
    SLUICE_FUZZ_CHECK((heap_bytes == 0) == !(sparse.in_list() || sparse.in_block()));
  }
  sparse.release();
  SLUICE_FUZZ_CHECK(heap_bytes == 0);
  return 0;
}

}  // namespace sluice::fuzz
