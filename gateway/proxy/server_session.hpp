// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gateway/proxy/connection_gate.hpp"
#include "gateway/proxy/net.hpp"

namespace sluice::proxy {

class Worker;

/// Serves one client connection until it closes (SPEC §4): keep-alive and pipelining (requests
/// answered in order); the head read within `header_timeout_ms` (408 then close), the wait for
/// the next request bounded by `idle_timeout_ms`; oversized heads 431, bodies 413, malformed
/// requests 400 (all closing the connection); route, then exchange() with the upstream; one
/// access log line per request. The coroutine owns the socket and `slot`; it runs on the
/// worker's thread and never throws.
net::awaitable<void> run_session(Worker& worker, tcp::socket socket, ConnectionSlot slot);

}  // namespace sluice::proxy
