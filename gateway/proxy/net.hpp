// SPDX-License-Identifier: Apache-2.0
// Namespace aliases and the completion token every data-path coroutine uses.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

namespace sluice::proxy {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

/// Errors are values: `auto [ec, n] = co_await op(..., kAsTuple);` (Boost 1.81: function form).
inline constexpr auto kAsTuple = net::as_tuple(net::use_awaitable);

}  // namespace sluice::proxy
