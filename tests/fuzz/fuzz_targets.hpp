// SPDX-License-Identifier: Apache-2.0
#pragma once

// The fuzz targets (docs/fuzzing.md): one function per parser of outside input, each taking the
// fuzzer's bytes. Built two ways: each with libFuzzer's driver under clang (the fuzz preset,
// `dev.sh fuzz`), and all of them in one test program that replays the corpus and the
// regression inputs kept in the repository (every build, every CI run).
//
// A target returns 0; a finding is a crash, a sanitizer report or a failed SLUICE_FUZZ_CHECK.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace sluice::fuzz {

using Input = std::span<const std::uint8_t>;

/// A whole HTTP/1.1 client connection through the data path (parse, normalize, route, identify,
/// limit, the forwarded head, request bodies) against an upstream that answers each request.
int request_head(Input input);
/// An upstream's response bytes, relayed to a client: the response head and its body framing.
int response_head(Input input);
/// Chunked (and other) bodies through the HTTP/1 parser, in both directions, at any split.
int chunked_body(Input input);
/// An HTTP/2 client connection (frames after the preface) through the same data path.
int http2_frames(Input input);
/// An HTTP/2 backend's frames to sluice's client session with three requests on it: each stream
/// gives a valid HTTP/1.1 response (or a prefix of one) and every read ends.
int h2_upstream_response(Input input);
/// The PROXY protocol header (versions 1 and 2).
int proxy_header(Input input);
/// The config reader and validator; a config it accepts must survive its own round trip.
int config_text(Input input);
/// The admin API: a method, a path and a body (first line `METHOD PATH`, then the body).
int admin_request(Input input);
/// RESP replies from Redis, and what the store reads out of them (script replies, cluster maps,
/// redirects).
int redis_reply(Input input);
/// Access log lines as `sluice replay` reads them: the fast scanner agrees with nlohmann::json on
/// every line it accepts, and the input as a whole log replays with counts that add up.
int access_log_line(Input input);
/// A client connection whose every request sluice forwards must read the same (method, target,
/// Host, framing, body) to an independent strict parser reading what the upstream received.
int request_differential(Input input);
/// Bearer tokens and JSON Web Key Sets (gateway/auth): base64url's one spelling, the keys a set
/// keeps, a token verified against fixed keys and a secret, the token cache's answer.
int jose_token(Input input);
/// The sliding window's sparse per-key ring against the dense ring (gateway/limiter): the same
/// decisions, counts and inspections for any shape, limits and clock samples.
int sliding_window(Input input);

/// Turns logging off: a target's inputs are mostly errors, each logged otherwise.
void quiet_logs();

/// The input as text.
inline std::string_view text_of(Input input) {
  return {reinterpret_cast<const char*>(input.data()), input.size()};
}

}  // namespace sluice::fuzz

/// Aborts (a finding) when an invariant a target checks does not hold.
#define SLUICE_FUZZ_CHECK(condition)  \
  ((condition) ? static_cast<void>(0) \
               : ::sluice::fuzz::detail::fail(#condition, __FILE__, __LINE__))

namespace sluice::fuzz::detail {
[[noreturn]] void fail(const char* condition, const char* file, int line);
}  // namespace sluice::fuzz::detail
