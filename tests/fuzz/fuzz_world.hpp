// SPDX-License-Identifier: Apache-2.0
#pragma once

// The data path for the HTTP fuzz targets: a fresh ProxyWorld (tests/support/proxy_world.hpp:
// the real snapshot, steps, session and exchange over in-memory streams, on a manual clock) per
// input, so one input cannot change what the next one meets, and everything an input left
// suspended is destroyed with its world.

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tests/support/proxy_world.hpp"

namespace sluice::fuzz {

/// The gateway config every HTTP target runs on: routes by prefix and by host, one that
/// forwards upgrades, a small limit keyed by header, bearer token or address, a breaker,
/// retries and trusted proxies, so that each step of the request path has work to do.
nlohmann::json http_fuzz_config();

/// A new world on http_fuzz_config().
std::unique_ptr<testing::ProxyWorld> make_http_world();

/// What the upstream connections answer, one response per new connection, in order: the kinds
/// of response the data path handles differently (length, chunked with trailers, no body,
/// close-delimited, an upgrade, a failure status).
void queue_upstream_answers(testing::ProxyWorld& world);

/// Runs one client connection of `world` that sends `bytes` (over HTTP/2 when `http2`), then
/// lets every deadline pass and closes it.
void run_client(testing::ProxyWorld& world, std::string_view bytes, bool http2);

}  // namespace sluice::fuzz
