// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/listen_socket.hpp"

#include <sys/socket.h>

namespace sluice::app {

namespace net = boost::asio;
Acceptor make_acceptor(net::io_context& ioc, const net::ip::tcp::endpoint& endpoint,
                       bool reuse_port, boost::system::error_code& ec) {
  Acceptor acceptor(ioc.get_executor());
  if (acceptor.open(endpoint.protocol(), ec)) {
    return acceptor;
  }
  acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (reuse_port) {
    acceptor.set_option(net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
  }
  if (!ec && !acceptor.bind(endpoint, ec)) {
    acceptor.listen(net::socket_base::max_listen_connections, ec);
  }
  return acceptor;
}

bool address_in_use(const net::ip::tcp::endpoint& endpoint) {
  if (endpoint.port() == 0) {
    return false;  // an ephemeral port is one nobody else holds
  }
  boost::system::error_code ec;
  net::io_context scratch;
  net::ip::tcp::acceptor probe(scratch);
  if (probe.open(endpoint.protocol(), ec)) {
    return false;
  }
  // SO_REUSEADDR as the real sockets: a connection of an earlier run in TIME_WAIT is no owner.
  probe.set_option(net::socket_base::reuse_address(true), ec);
  probe.bind(endpoint, ec);
  return ec == net::error::address_in_use;
}

std::string show(const net::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  return (address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" +
         std::to_string(endpoint.port());
}

}  // namespace sluice::app
