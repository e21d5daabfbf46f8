// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gateway/app/auth_setup.hpp"
#include "gateway/auth/credential_slot.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/tls/client_tls.hpp"

namespace sluice::app {

/// `auth.jwt.jwks_url` (docs/identity.md "Key sets"): the key set fetched over verified HTTPS
/// (the system store, or `jwks_ca`; the name verified is the URL's host) at once, then every
/// `jwks_refresh_s`, and when a token named a `kid` the set lacks, at most once per 10 s. A
/// failed fetch (no answer, not 200, not a key set) keeps the last good set, is logged and
/// counted (`sluice_jwks_refreshes_total{result="error"}`), and is retried after 10 s.
/// Confined to its executor's thread (the control thread).
class JwksRefresher {
 public:
  static constexpr std::chrono::seconds kUnknownKeyInterval{10};
  static constexpr std::chrono::seconds kRetry{10};

  JwksRefresher(boost::asio::any_io_executor executor, AuthSetup& auth,
                const auth::CredentialSlot& slot, metrics::Metrics& metrics,
                std::shared_ptr<spdlog::logger> log);
  JwksRefresher(const JwksRefresher&) = delete;
  JwksRefresher& operator=(const JwksRefresher&) = delete;
  ~JwksRefresher();

  /// Follows the config in force: a new URL, CA or period starts over (a fetch at once); no
  /// URL stops fetching. Returns the problem when `jwks_ca` cannot be loaded (nothing fetched).
  std::optional<std::string> follow(const std::optional<config::JwtConfig>& jwt);
  /// Starts a fetch when one is due (call every second).
  void tick();

 private:
  using Clock = std::chrono::steady_clock;
  boost::asio::awaitable<void> fetch(std::shared_ptr<bool> alive);
  /// One exchange: the body of a 200 answer, or nullopt with `error`.
  boost::asio::awaitable<std::optional<std::string>> download(std::string& error);

  boost::asio::any_io_executor executor_;
  AuthSetup& auth_;
  const auth::CredentialSlot& slot_;
  metrics::Metrics& metrics_;
  std::shared_ptr<spdlog::logger> log_;
  std::optional<std::string> url_;
  std::optional<std::string> ca_;
  std::chrono::seconds period_{300};
  std::shared_ptr<const tls::ClientTls> tls_;
  Clock::time_point next_{};
  Clock::time_point last_attempt_{};
  bool running_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// The parts of an `https://host[:port]/path` URL; false when it is not one.
struct HttpsUrl {
  std::string host;  ///< without brackets for an IPv6 literal
  std::string port = "443";
  std::string target = "/";
};
[[nodiscard]] bool parse_https_url(std::string_view url, HttpsUrl& out);

}  // namespace sluice::app
