// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <utility>

#include "tests/support/as_tuple.hpp"

namespace sluice::testing {

/// Accepts on `acceptor` until it is closed or its io_context stops, handing each socket to
/// `on_accept` (which usually co_spawns the connection's own coroutine). The in-process peers'
/// one accept loop; it runs on the acceptor's executor.
template <typename OnAccept>
void spawn_accept_loop(boost::asio::ip::tcp::acceptor& acceptor, OnAccept on_accept) {
  namespace net = boost::asio;
  net::co_spawn(
      acceptor.get_executor(),
      [&acceptor, on_accept = std::move(on_accept)]() mutable -> net::awaitable<void> {
        for (;;) {
          auto [ec, socket] = co_await acceptor.async_accept(kAsTuple);
          if (ec) {
            co_return;  // closed by the owner's destructor
          }
          on_accept(std::move(socket));
        }
      },
      net::detached);
}

}  // namespace sluice::testing
