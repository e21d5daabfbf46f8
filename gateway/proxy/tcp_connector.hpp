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
  TcpConnector(const Executor& executor, DeadlineSweep& sweep)
      : executor_(executor), sweep_(sweep) {}

  Task<Connected<Socket>> connect(const UpstreamEndpoint& endpoint,
                                  core::Duration timeout) override;

 private:
  Executor executor_;
  DeadlineSweep& sweep_;
};

}  // namespace sluice::proxy
