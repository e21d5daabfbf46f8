// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gateway/proxy/deadline.hpp"
#include "gateway/proxy/upstream_pool.hpp"

namespace sluice::proxy {

/// Opens plain TCP connections to upstream endpoints: an IP literal is connected to at once, a
/// host name is resolved first (per new connection; pooled ones skip this). The connect timeout
/// covers both and is a Deadline of the worker's sweep. The socket is made non-blocking with
/// TCP_NODELAY. Confined to the worker's thread; the sweep outlives it.
class TcpConnector final : public Connector<Socket> {
 public:
  /// Watching reads (UpstreamConnection::watch) take their memory from `ops`.
  TcpConnector(const Executor& executor, DeadlineSweep& sweep, std::pmr::memory_resource* ops)
      : executor_(executor), sweep_(sweep), ops_(ops) {}

  Task<Connected<Socket>> connect(const UpstreamEndpoint& endpoint,
                                  core::Duration timeout) override;

 private:
  Executor executor_;
  DeadlineSweep& sweep_;
  std::pmr::memory_resource* ops_;
};

}  // namespace sluice::proxy
