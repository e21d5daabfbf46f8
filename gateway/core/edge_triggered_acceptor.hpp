// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_socket.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <cstddef>
#include <utility>

#include "gateway/core/edge_triggered_socket.hpp"

// An acceptor whose connections arrive the way core::EdgeTriggeredSocket wants them
// (docs/architecture.md, "Readiness"): Asio's accept calls accept(), so every connection starts
// blocking and costs an `ioctl` to make it non-blocking before its first read, and Asio treats
// the descriptor as one that may be a dup, so closing it costs an `epoll_ctl` to deregister it.
// This one calls accept4() with SOCK_NONBLOCK and SOCK_CLOEXEC and hands the socket over
// knowing both: two system calls fewer per connection, as nginx accepts. The wait for the next
// connection, its cancellation and the speculative first try are Asio's reactor's, as for
// Asio's own accept. With the fallback of edge_triggered_socket.hpp, it is Asio's acceptor
// (and its sockets are Asio's).
namespace sluice::core {

#if SLUICE_EDGE_TRIGGERED_READS
namespace edge_detail {

/// One accept4() into an edge-triggered socket and the peer's address.
template <typename Protocol, typename Executor, typename Handler, typename IoExecutor>
class AcceptOp : public ad::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(AcceptOp);
  using Peer = EdgeTriggeredSocket<Protocol, Executor>;
  using Endpoint = typename Protocol::endpoint;

  AcceptOp(const boost::system::error_code& success_ec, int listener, Peer& peer, Endpoint& remote,
           Handler& handler, const IoExecutor& io_ex)
      : ad::reactor_op(success_ec, &AcceptOp::do_perform, &AcceptOp::do_complete),
        listener_(listener),
        peer_(peer),
        remote_(remote),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status do_perform(ad::reactor_op* base) {
    auto* o = static_cast<AcceptOp*>(base);
    for (;;) {
      auto length = static_cast<socklen_t>(o->remote_.capacity());
      const int accepted = ::accept4(o->listener_, static_cast<sockaddr*>(o->remote_.data()),
                                     &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (accepted >= 0) {
        o->accepted_ = accepted;
        o->remote_.resize(length);
        return done;
      }
      // A connection reset while queued is skipped for the next one at once (Asio waits for
      // the next edge instead, which may be long in coming when the queue holds more).
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) {
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return not_done;  // the queue is empty: the reactor waits for the next edge
      }
      o->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
      return done;  // say, out of descriptors: the caller decides
    }
  }

  static void do_complete(void* owner, ad::operation* base, const boost::system::error_code&,
                          std::size_t) {
    auto* o = static_cast<AcceptOp*>(base);
    if (o->accepted_ >= 0) {
      if (owner != nullptr) {
        o->peer_.adopt_accepted(o->remote_.protocol(), o->accepted_, o->ec_);
      }
      if (owner == nullptr || o->ec_) {
        ::close(o->accepted_);  // the io_context is going away, or the peer could not take it
      }
      o->accepted_ = -1;
    }
    complete_op<AcceptOp, Handler, IoExecutor, false>(owner, o);
  }

  int listener_;
  int accepted_ = -1;
  Peer& peer_;
  Endpoint& remote_;
  Handler handler_;
  ad::handler_work<Handler, IoExecutor> work_;
};

}  // namespace edge_detail
#endif

#if SLUICE_EDGE_TRIGGERED_READS
/// A listening socket whose async_accept() into an EdgeTriggeredSocket uses accept4() (above).
/// It is made from an Asio acceptor already bound and listening, whose descriptor it takes
/// over, and keeps the socket interface an acceptor shares (is_open, close, cancel,
/// local_endpoint, native_handle). (It is an Asio socket rather than an Asio acceptor: only a
/// socket lets a derived class reach the descriptor's reactor state.)
template <typename Protocol, typename Executor>
class EdgeTriggeredAcceptor : public boost::asio::basic_socket<Protocol, Executor> {
  using Base = boost::asio::basic_socket<Protocol, Executor>;

 public:
  using Peer = EdgeTriggeredSocket<Protocol, Executor>;
  using Listening = boost::asio::basic_socket_acceptor<Protocol, Executor>;

  /// Takes over `listening`'s descriptor (bound and listening) on the same executor. A closed
  /// `listening` gives a closed acceptor. Throws boost::system::system_error if the descriptor
  /// cannot be registered again.
  explicit EdgeTriggeredAcceptor(Listening&& listening) : Base(listening.get_executor()) {
    if (listening.is_open()) {
      const Protocol protocol = listening.local_endpoint().protocol();
      this->assign(protocol, listening.release());
    }
  }
  EdgeTriggeredAcceptor(EdgeTriggeredAcceptor&& other) noexcept
      : Base(std::move(other)), reactor_(std::exchange(other.reactor_, nullptr)) {}
  EdgeTriggeredAcceptor& operator=(EdgeTriggeredAcceptor&& other) noexcept {
    Base::operator=(std::move(other));
    reactor_ = std::exchange(other.reactor_, nullptr);
    return *this;
  }
  EdgeTriggeredAcceptor(const EdgeTriggeredAcceptor&) = delete;
  EdgeTriggeredAcceptor& operator=(const EdgeTriggeredAcceptor&) = delete;
  ~EdgeTriggeredAcceptor() = default;

  /// Accepts the next connection into `peer` (closed) and its address into `remote`; completes
  /// with (error_code): already_open if `peer` is open, operation_aborted when cancelled or
  /// closed meanwhile.
  template <typename Token>
  auto async_accept(Peer& peer, typename Protocol::endpoint& remote, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this, &peer, &remote](auto handler) {
          this->start_accept(std::move(handler), peer, remote);
        },
        token);
  }

 private:
  template <typename Handler>
  void start_accept(Handler handler, Peer& peer, typename Protocol::endpoint& remote) {
    namespace ad = boost::asio::detail;
    using Op = edge_detail::AcceptOp<Protocol, Executor, Handler, Executor>;
    ad::reactor& reactor = edge_detail::reactor_of(*this, reactor_);
    auto& impl = this->impl_.get_implementation();
    typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(boost::system::error_code(), impl.socket_, peer, remote, handler,
                       this->impl_.get_executor());
    if (peer.is_open()) {
      p.p->ec_ = boost::asio::error::already_open;
      reactor.post_immediate_completion(p.p, false);
      p.v = p.p = nullptr;
      return;
    }
    edge_detail::start_reactor_op<Op>(reactor, impl, p, ad::reactor::read_op, true);
  }

  void* reactor_ = nullptr;  ///< (the reactor, once looked up)
};
#else
/// Without the edge-triggered operations: Asio's acceptor.
template <typename Protocol, typename Executor>
using EdgeTriggeredAcceptor = boost::asio::basic_socket_acceptor<Protocol, Executor>;
#endif

/// The workers' TCP acceptor: accepts into core::TcpSocket.
using TcpAcceptor =
    EdgeTriggeredAcceptor<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

}  // namespace sluice::core
