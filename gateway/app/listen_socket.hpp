// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <string>

// Listening sockets of the gateway (proxy and admin). Stateless functions; thread-safe.
namespace sluice::app {

/// An acceptor bound to `endpoint` and listening, with SO_REUSEADDR, and SO_REUSEPORT when
/// `reuse_port` (one listening socket per worker on the same port; the kernel spreads
/// connections). On failure `ec` says why and the acceptor is not usable.
[[nodiscard]] boost::asio::ip::tcp::acceptor make_acceptor(
    boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint, bool reuse_port,
    boost::system::error_code& ec);

/// "ADDRESS:PORT", with IPv6 addresses in brackets.
[[nodiscard]] std::string show(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sluice::app
