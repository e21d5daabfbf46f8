// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <memory_resource>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/routing/balancer.hpp"
#include "gateway/proxy/steps/identify_step.hpp"
#include "gateway/proxy/upstream/upstream_pool.hpp"

// What an exchange is handed by its session (docs/architecture.md, "The request path"): the
// client's end and the worker's upstream side. exchange_state.hpp is what it makes of them.
namespace sluice::proxy {

/// The client side of an exchange: the session's stream, its read buffer (holding the request
/// head at [0, head size) and whatever followed) and its two deadlines.
template <typename Stream>
struct Downstream {
  Stream& stream;
  beast::flat_buffer& buffer;
  Deadline& read_deadline;
  Deadline& write_deadline;
  const Peer& peer;
};

/// What the exchange needs of its worker: the upstream side, the pool its operations take memory
/// from, the open-tunnel count (atomic, every worker's). A test builds one around an in-memory
/// connector. References outlive the exchange; confined to the worker's thread.
template <typename Stream>
struct UpstreamContext {
  UpstreamPool<Stream>& pool;
  Connector<Stream>& connector;
  BalanceCursor& cursor;
  DeadlineSweep& sweep;
  const core::Clock& clock;
  const std::atomic<bool>& draining;
  std::pmr::memory_resource* ops;
  std::atomic<std::int64_t>* tunnels;
};

}  // namespace sluice::proxy
