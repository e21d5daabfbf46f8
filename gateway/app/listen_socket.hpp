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

/// An acceptor bound to `endpoint` and listening, with SO_REUSEADDR, and SO_REUSEPORT when
/// `reuse_port` (one listening socket per worker on the same port; the kernel spreads
/// connections). On failure `ec` says why and the acceptor is not usable.
[[nodiscard]] Acceptor make_acceptor(boost::asio::io_context& ioc,
                                     const boost::asio::ip::tcp::endpoint& endpoint,
                                     bool reuse_port, boost::system::error_code& ec);

/// Whether another socket already listens on `endpoint` (another process, or an old sluice):
/// a bind without SO_REUSEPORT fails where any listener holds the address, while sluice's own
/// workers then share it with SO_REUSEPORT (docs/behaviour.md, "Listeners"). Blocking; at start.
[[nodiscard]] bool address_in_use(const boost::asio::ip::tcp::endpoint& endpoint);

/// "ADDRESS:PORT", with IPv6 addresses in brackets.
[[nodiscard]] std::string show(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sluice::app
