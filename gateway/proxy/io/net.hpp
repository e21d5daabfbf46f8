// SPDX-License-Identifier: Apache-2.0
// Namespace aliases, the data path's executor and socket types, and the completion token every
// data-path coroutine uses.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cstddef>
#include <memory_resource>

#include "gateway/core/edge_triggered_acceptor.hpp"
#include "gateway/core/edge_triggered_socket.hpp"

namespace sluice::proxy {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

/// Each worker runs one io_context on one thread, and everything of the data path is bound to
/// it by type: no type-erased executor is copied per operation (docs/architecture.md,
/// "Threads").
using Executor = net::io_context::executor_type;
using Socket = core::TcpSocket;      ///< reads trust edge-triggered readiness (its header says why)
using Acceptor = core::TcpAcceptor;  ///< accepts with accept4 (its header says why)
using Resolver = net::ip::basic_resolver<tcp, Executor>;

/// A data-path coroutine.
template <typename T>
using Task = net::awaitable<T, Executor>;

/// Errors are values: `auto [ec, n] = co_await op(..., kAsTuple);` (Boost 1.81: function form).
inline constexpr auto kAsTuple = net::as_tuple(net::use_awaitable_t<Executor>{});

/// kAsTuple with the operation's memory taken from `ops`, the worker's pool (a pmr resource
/// confined to its thread): however many reads and writes are pending at once, one costs no
/// heap allocation once the pool is warm (docs/architecture.md, "Memory").
inline auto pooled(std::pmr::memory_resource* ops) {
  return net::bind_allocator(std::pmr::polymorphic_allocator<std::byte>(ops), kAsTuple);
}

}  // namespace sluice::proxy
