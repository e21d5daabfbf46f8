// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <cstdint>
#include <memory>

#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/upstream/upstream_pool.hpp"
#include "gateway/proxy/upstream/upstream_stream.hpp"

namespace sluice::proxy {

/// Opens upstream connections: TCP, then TLS for a backend that speaks it (docs/tls.md
/// "Upstream TLS"). An IP literal is connected to at once, a host name is resolved first (per
/// new connection; pooled ones skip this). The connect timeout covers resolving, connecting and
/// the TLS handshake, and is a Deadline of the worker's sweep. The socket is made non-blocking
/// with TCP_NODELAY. A failed TLS handshake (a certificate that does not verify, among others)
/// is a connect error, logged with its reason at most once a second per worker. Confined to
/// the worker's thread; the sweep and the logger outlive it.
class TcpConnector final : public Connector<UpstreamStream> {
 public:
  /// Watching reads (UpstreamConnection::watch) take their memory from `ops`.
  TcpConnector(const Executor& executor, DeadlineSweep& sweep, std::pmr::memory_resource* ops,
               std::shared_ptr<spdlog::logger> log)
      : executor_(executor), sweep_(sweep), ops_(ops), log_(std::move(log)) {}

  Task<Connected<UpstreamStream>> connect(const UpstreamEndpoint& endpoint,
                                          core::Duration timeout) override;
  /// connect() without the watching read: the connection for an HTTP/2 session, which reads
  /// for itself (h2_connector.hpp). Over TLS, an `h2` endpoint offers ALPN `h2` and a backend
  /// that does not choose it is a connect error.
  Task<Connected<UpstreamStream>> open(const UpstreamEndpoint& endpoint, core::Duration timeout);

 private:
  Task<boost::system::error_code> connect_tcp(UpstreamStream& stream,
                                              const UpstreamEndpoint& endpoint,
                                              const Deadline& deadline, Resolver*& resolving);
  Task<boost::system::error_code> handshake(UpstreamStream& stream,
                                            const UpstreamEndpoint& endpoint);
  void note_tls_failure(const UpstreamEndpoint& endpoint, const std::string& reason);

  Executor executor_;
  DeadlineSweep& sweep_;
  std::pmr::memory_resource* ops_;
  std::shared_ptr<spdlog::logger> log_;
  core::TimePoint next_log_{};
  std::uint64_t suppressed_ = 0;
};

}  // namespace sluice::proxy
