// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <string>

// Listening sockets of the gateway (proxy and admin). Stateless functions; thread-safe.
namespace sluice::app {

/// An acceptor on `ioc`'s own executor type (what the data path uses; it converts to a
/// tcp::acceptor for the admin listener).
using Acceptor = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp,
                                                    boost::asio::io_context::executor_type>;

/// How a listening socket hands over its connections.
struct AcceptorOptions {
  /// SO_REUSEPORT: one listening socket per worker on the same port; the kernel spreads
  /// connections.
  bool reuse_port = false;
  /// TCP_DEFER_ACCEPT: a connection is handed over once its first bytes arrived, or after
  /// kDeferAcceptSeconds without any (docs/behaviour.md, "Listeners").
  bool defer_accept = false;
};

/// How long the kernel holds a connection that has sent nothing before handing it over anyway.
inline constexpr int kDeferAcceptSeconds = 1;

/// An acceptor bound to `endpoint` and listening, with SO_REUSEADDR and `options`. On failure
/// `ec` says why and the acceptor is not usable.
[[nodiscard]] Acceptor make_acceptor(boost::asio::io_context& ioc,
                                     const boost::asio::ip::tcp::endpoint& endpoint,
                                     AcceptorOptions options, boost::system::error_code& ec);

/// Whether another socket already listens on `endpoint` (another process, or an old sluice):
/// a bind without SO_REUSEPORT fails where any listener holds the address, while sluice's own
/// workers then share it with SO_REUSEPORT (docs/behaviour.md, "Listeners"). Blocking; at start.
[[nodiscard]] bool address_in_use(const boost::asio::ip::tcp::endpoint& endpoint);

/// "ADDRESS:PORT", with IPv6 addresses in brackets.
[[nodiscard]] std::string show(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sluice::app
