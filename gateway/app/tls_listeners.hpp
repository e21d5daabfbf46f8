// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/tls/ocsp_fetcher.hpp"
#include "gateway/tls/server_tls.hpp"
#include "gateway/tls/ticket_keys.hpp"

namespace sluice::app {

/// The certificates of the gateway's TLS listeners (docs/tls.md): loaded at start, re-read on
/// SIGHUP and `POST /admin/tls/reload` (all listeners or none: a bad file keeps every old
/// certificate), their expiry exported as `sluice_tls_certificate_expiry_timestamp_seconds`,
/// and the process's session ticket keys, rotated every TicketKeys::kRotationPeriod.
/// Confined to the control thread; workers read the slots (thread-safe). References `metrics`
/// and `clock`, which outlive it.
class TlsListeners {
 public:
  /// `listeners` is the config the gateway started with (listeners need a restart).
  TlsListeners(const std::vector<config::ListenerConfig>& listeners, metrics::Metrics& metrics,
               const core::Clock& clock, std::shared_ptr<spdlog::logger> log);

  /// Loads every certificate; the first problem, or nothing when all loaded.
  [[nodiscard]] std::optional<std::string> load();
  /// Listener `index`'s slot; null for a plain listener.
  [[nodiscard]] std::shared_ptr<const tls::CertificateSlot> slot(std::size_t index) const {
    return slots_[index];
  }
  [[nodiscard]] bool any() const noexcept;

  /// Re-reads every certificate file; on success swaps them in for new connections. Logs the
  /// outcome (the caller counts it). Returns the problem, if any.
  std::optional<std::string> reload();
  /// Starts keeping `"ocsp": "fetch"` staples fresh, on `executor` (the control thread's).
  void start_ocsp(boost::asio::any_io_executor executor);
  /// Rotates the ticket keys when a period has passed since the last rotation, and runs the
  /// OCSP fetches that are due (call often).
  void tick();
  /// What is served now: per TLS listener, each certificate's subject, names and expiry.
  [[nodiscard]] nlohmann::json describe() const;
  /// A dry run of reload(): reads and checks every certificate file, installs nothing. The
  /// problem, or nothing with `would_serve` set to what describe() would answer after reload().
  [[nodiscard]] std::optional<std::string> preview(nlohmann::json& would_serve) const;

 private:
  /// Loads every listener's certificates into `out`; the first problem, if any.
  std::optional<std::string> load_all(
      std::vector<std::shared_ptr<const tls::ServerTls>>& out) const;
  void export_expiry();
  /// Logs each certificate of listener `listener` whose `ocsp` file staples nothing (stale).
  void warn_ocsp(const tls::ServerTls& served, std::size_t listener) const;
  /// describe() of `served` (per listener; null: plain).
  [[nodiscard]] nlohmann::json describe(
      const std::vector<std::shared_ptr<const tls::ServerTls>>& served) const;

  const std::vector<config::ListenerConfig>& listeners_;
  metrics::Metrics& metrics_;
  const core::Clock& clock_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<tls::TicketKeys> keys_ = std::make_shared<tls::TicketKeys>();
  core::TimePoint keys_since_;
  std::vector<std::shared_ptr<tls::CertificateSlot>> slots_;  ///< per listener; null: plain
  std::unique_ptr<tls::OcspFetcher> ocsp_;                    ///< set by start_ocsp()
  /// Tells the fetcher what is served now (after a load or reload).
  void watch_ocsp();
};

}  // namespace sluice::app
