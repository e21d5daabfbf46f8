// SPDX-License-Identifier: Apache-2.0
// Gateway, the admin listener (docs/admin-api.md): binding it, and what it answers besides the
// admin API (metrics, health and readiness). On the control thread.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/app/gateway.hpp"
#include "gateway/app/listen_socket.hpp"
#include "gateway/log/logging.hpp"

namespace sluice::app {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

}  // namespace

bool Gateway::bind_admin() {
  boost::system::error_code ec;
  const auto address = net::ip::make_address(config_->admin.address, ec);
  if (!admin_token_) {
    log_->warn("the admin API is open (no token): admin.token_env={} is unset or empty",
               config_->admin.token_env.value_or("null"));
  }
  auto acceptor = make_acceptor(control_, tcp::endpoint(address, config_->admin.port), false, ec);
  if (ec) {
    log_->error("cannot listen admin address={} port={} error={}", config_->admin.address,
                config_->admin.port, ec.message());
    return false;
  }
  admin_endpoint_ = acceptor.local_endpoint();
  admin_ = std::make_shared<admin::AdminServer>(
      tcp::acceptor(std::move(acceptor)),
      [this](const admin::Request& req, const tcp::endpoint& peer) {
        return handle_admin(req, peer);
      },
      log::get("admin"));
  admin_->start();
  std::string listeners;
  for (std::size_t i = 0; i < listener_endpoints_.size(); ++i) {
    listeners += (i == 0 ? "" : ",") + listeners_[i].name + "@" + show(listener_endpoints_[i]);
  }
  // `proxy` is the first listener (v1's one), `listeners` all of them by name (last, so v1's
  // prefix of the line stays as it was for whatever parses it).
  log_->info("ready proxy={} admin={} threads={} listeners={}", show(listener_endpoints_.front()),
             show(admin_endpoint_), workers_.size(), listeners);
  return true;
}

net::awaitable<admin::Reply> Gateway::handle_admin(const admin::Request& req,
                                                   const tcp::endpoint& peer) {
  const std::string_view target = req.target();
  if (target == "/admin" || target.starts_with("/admin/") || target.starts_with("/admin?")) {
    co_return co_await admin_api_->handle(req, peer);
  }
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = admin::json_error(req, http::status::method_not_allowed, "method_not_allowed");
    res.set(http::field::allow, "GET, HEAD");
    co_return res;
  }
  if (target == "/metrics") {
    auto res = admin::text(req, http::status::ok, metrics_.scrape());
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    co_return res;
  }
  if (target == "/healthz") {
    co_return admin::text(req, http::status::ok, "ok\n");
  }
  if (target == "/readyz") {
    co_return draining_ ? admin::text(req, http::status::service_unavailable, "draining\n")
                        : admin::text(req, http::status::ok, "ready\n");
  }
  co_return admin::json_error(req, http::status::not_found, "not_found");
}

}  // namespace sluice::app
