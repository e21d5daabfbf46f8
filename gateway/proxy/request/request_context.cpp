// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/request/request_context.hpp"

#include <algorithm>
#include <random>
#include <string_view>

namespace sluice::proxy {
namespace {

/// splitmix64 seeded once per thread from std::random_device.
std::uint64_t next_random() noexcept {
  thread_local std::uint64_t state = [] {
    std::random_device device;
    return (std::uint64_t{device()} << 32U) | device();
  }();
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

constexpr std::size_t kStringsKept = 4096;  // larger scratch strings are freed between requests

void trim_capacity(std::string& s) {
  s.clear();
  if (s.capacity() > kStringsKept) {
    s.shrink_to_fit();
  }
}

}  // namespace

void RequestId::generate() noexcept {
  // Two hex digits per byte from one lookup: an id is made for nearly every request.
  static constexpr auto kPairs = [] {
    constexpr std::string_view kHex = "0123456789abcdef";
    std::array<char, 512> pairs{};
    for (std::size_t b = 0; b < 256; ++b) {
      pairs[2 * b] = kHex[b >> 4U];
      pairs[2 * b + 1] = kHex[b & 0xfU];
    }
    return pairs;
  }();
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t bits = next_random();
    for (std::size_t i = 0; i < 8; ++i) {
      const std::size_t b = bits & 0xffU;
      text_[half * 16 + 2 * i] = kPairs[2 * b];
      text_[half * 16 + 2 * i + 1] = kPairs[2 * b + 1];
      bits >>= 8U;
    }
  }
  size_ = 32;
  generated_ = true;
}

void RequestContext::reset(core::TimePoint now, const Snapshot& snap) {
  started = now;
  wall = {};  // read only by the access log; begin_request() sets it when the log is on
  snapshot = &snap;
  parser.emplace();
  path = {};
  query = {};
  trim_capacity(path_scratch);
  trim_capacity(target_scratch);
  upstream_target = {};
  authority = {};
  rewrite_host = false;
  client_keep_alive = false;
  upgrade = false;
  http2 = false;
  grpc = false;
  grpc_timeout.reset();
  route = nullptr;
  backend = nullptr;
  route_metrics = &snap.unrouted_metrics();
  user = {};
  trim_capacity(user_scratch);
  auth_label = "none";
  tier.clear();
  auth_reason = {};
  has_user_label = false;
  has_user_hash = false;
  verdict.reset();
  extra_count = 0;
  admission.reset();
  concurrency_slot.reset();
  breaker_label = "off";
  error.reset();
  allow = {};
  allow_scratch.clear();
  trim_capacity(location);
  retry_after_s = 0;
  trim_capacity(body_scratch);
  reply_body = {};
  outcome = ExchangeOutcome{};
  keep_alive = false;
  trim_capacity(log_method);
  trim_capacity(log_path);
  trim_capacity(log_host);
  trim_capacity(log_client);
  response.reset();
  response_parsed = 0;
  up_out.clear();
  down_out.clear();
}

ContextPool::Lease ContextPool::acquire() {
  peak_ = std::max(peak_, ++in_use_);
  if (free_.empty()) {
    return {*this, std::make_unique<RequestContext>()};
  }
  auto ctx = std::move(free_.back());
  free_.pop_back();
  return {*this, std::move(ctx)};
}

void ContextPool::trim() {
  const std::size_t needed = peak_ > in_use_ ? peak_ - in_use_ : 0;
  if (free_.size() > needed) {  // from the LIFO's bottom: the coldest
    free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(free_.size() - needed));
  }
  peak_ = in_use_;
}

void ContextPool::give_back(std::unique_ptr<RequestContext> ctx) {
  --in_use_;
  if (free_.size() < kMostKept) {
    ctx->parser.reset();  // drops the views of the read buffers
    ctx->response.reset();
    ctx->admission.reset();
    ctx->concurrency_slot.reset();
    free_.push_back(std::move(ctx));
  }
}

}  // namespace sluice::proxy
