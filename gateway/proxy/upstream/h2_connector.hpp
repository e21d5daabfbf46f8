// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/http2/client_connection.hpp"
#include "gateway/proxy/upstream/tcp_connector.hpp"

// HTTP/2 to backends (docs/grpc.md, "HTTP/2 to backends"; the design:
// docs/decisions/0026-http2-upstream-streams.md).
namespace sluice::proxy {

/// One HTTP/2 connection to a backend endpoint: its socket (TLS or plain), the protocol state
/// (http2::ClientConnection), a read loop feeding it and a write loop flushing its frames. Kept
/// alive by its loops and by the connector's list; ends when the backend closes, a protocol
/// error, a GOAWAY once its streams are done, or close(). Confined to the worker's thread.
class H2UpstreamSession final : public std::enable_shared_from_this<H2UpstreamSession>,
                                public http2::ClientHost {
 public:
  H2UpstreamSession(const Executor& executor, const UpstreamEndpoint& endpoint,
                    std::shared_ptr<spdlog::logger> log);
  ~H2UpstreamSession();
  H2UpstreamSession(const H2UpstreamSession&) = delete;
  H2UpstreamSession& operator=(const H2UpstreamSession&) = delete;

  /// The connection is open (`connection`, not watched): the loops start.
  void start(ConnectionPtr<UpstreamStream> connection);
  /// Connecting failed with `ec`: whoever waits for it learns so.
  void connect_failed(boost::system::error_code ec);
  /// Why connecting failed (none while connecting or once open).
  [[nodiscard]] boost::system::error_code connect_error() const noexcept { return connect_error_; }
  /// Waits until the connection is open or failed (at once when it is one already).
  Task<void> wait_connected();

  [[nodiscard]] bool connecting() const noexcept { return connecting_; }
  /// Open, and able to take one more stream of at most `max` on it, besides those reserved.
  [[nodiscard]] bool can_open(std::uint32_t max) const;
  /// Done for: failed to connect, or the connection is gone or going away with no stream left.
  [[nodiscard]] bool finished() const;
  /// Streams open on it plus those reserved by requests waiting for it to connect.
  [[nodiscard]] std::size_t load() const noexcept;
  /// Opened with these TLS settings (null: h2c).
  [[nodiscard]] const tls::ClientTls* tls() const noexcept { return tls_; }
  /// A new request stream (can_open() must be true).
  http2::ClientStreamPtr open_stream() { return protocol_->open(); }
  /// When it was last seen in use (a stream opened, or busy at a sweep).
  [[nodiscard]] core::TimePoint idle_since() const noexcept { return idle_since_; }
  void note_activity(core::TimePoint now) noexcept;
  /// Closes the connection (idle, shutdown, a removed endpoint); its streams fail.
  void close();

  std::size_t reserved = 0;  ///< requests waiting for the connect, each with a stream to open

 private:
  void on_output() override;
  Task<void> read_loop();
  /// Writes what the protocol has queued: at once while the socket takes it, else one async
  /// write at a time (writing_), each completion flushing again.
  void flush();
  void end(std::string_view why);

  Executor executor_;
  std::string label_;
  const tls::ClientTls* tls_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<http2::ClientConnection> protocol_;
  ConnectionPtr<UpstreamStream> connection_;
  net::steady_timer connected_;  ///< cancelled when connecting ends: waiters wake
  bool connecting_ = true;
  boost::system::error_code connect_error_;
  bool writing_ = false;
  bool flush_queued_ = false;
  bool ended_ = false;
  std::string out_;
  core::TimePoint idle_since_{};
};

/// The worker's connector: HTTP/1.1 endpoints get the TCP connector's connections; `h2` and
/// `h2c` endpoints get a stream on one of a few HTTP/2 connections per endpoint, opened on
/// demand. A stream goes on the connection with room (fewer than the backend's
/// `max_streams_per_connection` and its SETTINGS_MAX_CONCURRENT_STREAMS), on one being
/// connected with room, or on a new connection. A connection the backend sent GOAWAY on takes
/// no new stream; the streams it accepted finish there. Confined to the worker's thread.
class H2Connector final : public Connector<UpstreamStream> {
 public:
  /// Streams' watching reads take their memory from `ops`.
  H2Connector(const Executor& executor, TcpConnector& http1, const core::Clock& clock,
              std::pmr::memory_resource* ops, std::shared_ptr<spdlog::logger> log)
      : executor_(executor), tcp_(http1), clock_(clock), ops_(ops), log_(std::move(log)) {}
  ~H2Connector() override { clear(); }
  H2Connector(const H2Connector&) = delete;
  H2Connector& operator=(const H2Connector&) = delete;

  Task<Connected<UpstreamStream>> connect(const UpstreamEndpoint& endpoint,
                                          core::Duration timeout) override;

  /// Closes connections without a stream for `max_idle` and every connection to an endpoint
  /// `keep` rejects; forgets finished ones. Returns how many it closed.
  std::size_t sweep(const std::function<bool(std::string_view endpoint)>& keep,
                    core::Duration max_idle);
  /// Closes everything (shutdown).
  void clear();
  /// HTTP/2 connections open or being opened.
  [[nodiscard]] std::size_t connections() const;

 private:
  Connected<UpstreamStream> stream_on(H2UpstreamSession& session, const UpstreamEndpoint& endpoint);
  using Sessions = std::vector<std::shared_ptr<H2UpstreamSession>>;

  Executor executor_;
  TcpConnector& tcp_;
  const core::Clock& clock_;
  std::pmr::memory_resource* ops_;
  std::shared_ptr<spdlog::logger> log_;
  std::unordered_map<std::string, Sessions> sessions_;  ///< by endpoint label
};

}  // namespace sluice::proxy
