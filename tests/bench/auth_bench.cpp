// SPDX-License-Identifier: Apache-2.0
// What identity costs per request (docs/identity.md, docs/benchmarks.md "Identity"): a token
// seen for the first time (the whole verification, signature included), the same token again
// (the worker's cache), and a forged token from an address the failure policy has tripped (what
// the proxy spends on each request of a flood). Tokens and keys: tests/unit/auth/jws_vectors.hpp
// (signed by python3-cryptography). Compare the first with `openssl speed -evp` on the same
// curve (the ratio is in docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gateway/auth/credential_slot.hpp"
#include "gateway/auth/jwt_verifier.hpp"
#include "gateway/auth/token_cache.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/proxy/steps/auth_failure_ledger.hpp"
#include "tests/unit/auth/vector_verifier.hpp"

namespace sluice::bench {
namespace {

const std::chrono::system_clock::time_point kNow{std::chrono::seconds(1'800'000'000)};

std::shared_ptr<const auth::JwtVerifier> vector_verifier() {
  return auth::vectors::make_vector_verifier(true);
}

/// A first-seen token: the whole verification (parse, claims, signature), nothing cached.
/// Arg: 0 ES256, 1 ES384, 2 RS256, 3 PS256, 4 EdDSA, 5 HS256.
void BM_JwtVerifyFirstSeen(benchmark::State& state) {
  const auto verifier = vector_verifier();
  const std::array<const char*, 6> tokens{auth::vectors::kES256, auth::vectors::kES384,
                                          auth::vectors::kRS256, auth::vectors::kPS256,
                                          auth::vectors::kEdDSA, auth::vectors::kHS256};
  const std::string token = tokens.at(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    auto verdict = verifier->verify(token, kNow);
    benchmark::DoNotOptimize(verdict);
    if (!std::holds_alternative<auth::VerifiedToken>(verdict)) {
      state.SkipWithError("the vector did not verify");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_JwtVerifyFirstSeen)->DenseRange(0, 5)->ArgName("alg");

/// A token the worker verified before: the cache's SHA-256 and lookup, what a repeated token
/// costs on the data path.
void BM_JwtCachedToken(benchmark::State& state) {
  auth::TokenCache cache;
  const std::string token = auth::vectors::kES256;
  cache.remember(token, vector_verifier()->verify(token, kNow), kNow);
  for (auto _ : state) {
    benchmark::DoNotOptimize(cache.find(token, kNow));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_JwtCachedToken);

/// A forged token (a new one each time: a flood never repeats) from an address the failure
/// policy has tripped: the cache misses, the ledger refuses, nothing is verified.
void BM_ForgedTokenShed(benchmark::State& state) {
  const core::SteadyClock clock;
  proxy::AuthFailureLedger ledger(clock);
  ledger.configure(config::AuthFailurePolicyConfig{});
  for (int i = 0; i < 100; ++i) {
    ledger.count_failure("198.51.100.9");
  }
  auth::TokenCache cache;
  std::string token = auth::vectors::kES256;
  token.back() = token.back() == 'A' ? 'B' : 'A';  // a bad signature
  std::uint64_t n = 0;
  core::Duration retry_after{};
  for (auto _ : state) {
    token[token.size() - 2 - (n % 16)] = static_cast<char>('a' + (n % 26));  // never repeats
    ++n;
    if (cache.find(token, kNow) == nullptr) {
      benchmark::DoNotOptimize(ledger.tripped("198.51.100.9", retry_after));
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ForgedTokenShed);

}  // namespace
}  // namespace sluice::bench
