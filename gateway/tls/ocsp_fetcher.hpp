// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gateway/tls/server_tls.hpp"

// `"ocsp": "fetch"` (docs/tls.md, "OCSP stapling"): the responder named in a certificate's
// Authority Information Access asked over HTTP, its answer verified, then stapled.
namespace sluice::tls {

/// Keeps the stapled OCSP responses of every `"fetch"` certificate fresh: each is fetched at
/// once, then again halfway to its nextUpdate (at least a minute apart); a failed fetch is
/// logged and retried (30 s, doubling up to 10 min) while the last good response staples on
/// until its nextUpdate, never after. Confined to its executor's thread (the control thread).
class OcspFetcher {
 public:
  using SystemTime = std::chrono::system_clock::time_point;

  /// `on_change` runs after a staple was replaced or cleared (to refresh the expiry gauge).
  OcspFetcher(boost::asio::any_io_executor executor, std::shared_ptr<spdlog::logger> log,
              std::function<void()> on_change);
  OcspFetcher(const OcspFetcher&) = delete;
  OcspFetcher& operator=(const OcspFetcher&) = delete;
  ~OcspFetcher();

  /// From now on keeps the `"fetch"` certificates of `served` fresh (listener `listener`, in
  /// the order of `served`, null: plain), instead of those watched before. A certificate that
  /// was watched before (the same leaf) keeps its response and its schedule.
  void watch(const std::vector<std::shared_ptr<const ServerTls>>& served,
             const std::vector<std::string>& listeners);
  /// Starts the fetches that are due and clears staples past their nextUpdate (call often).
  void tick(SystemTime now);

 private:
  struct Target {
    std::shared_ptr<const ServerTls> owner;  ///< keeps `cert` (and its X509s) alive
    const ServedCertificate* cert = nullptr;
    std::string listener;
    std::size_t index = 0;
    std::string url;
    SystemTime next_fetch{};
    int failures = 0;
    bool running = false;
  };
  boost::asio::awaitable<void> fetch(std::shared_ptr<Target> target);
  /// One exchange with the responder: the DER body of its 200 answer, or empty with `error`.
  boost::asio::awaitable<std::vector<unsigned char>> ask(const std::string& url,
                                                         const std::vector<unsigned char>& request,
                                                         std::string& error);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<spdlog::logger> log_;
  std::function<void()> on_change_;
  std::vector<std::shared_ptr<Target>> targets_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// The parts of an `http://host[:port]/path` URL; false when it is not one.
struct HttpUrl {
  std::string host;
  std::string port = "80";
  std::string target = "/";
};
[[nodiscard]] bool parse_http_url(std::string_view url, HttpUrl& out);

}  // namespace sluice::tls
