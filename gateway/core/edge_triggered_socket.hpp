// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <boost/version.hpp>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

// A stream socket that learns readiness from the reactor's edge-triggered events instead of
// asking the kernel (docs/architecture.md, "Readiness"), as nginx does with its `ready` flag.
//
// Asio registers every socket with epoll once, edge-triggered, and starts a read by trying the
// receive at once ("speculatively"); it stops trying only after a receive returned end of file.
// So a read started when nothing has arrived costs a receive that fails with EAGAIN: between
// requests on a keep-alive connection, and on every upstream connection while the response is
// awaited, one system call per request for nothing. A wait (async_wait) costs the same: Asio
// re-arms the descriptor with epoll_ctl to start it.
//
// This socket reads with an operation that also counts a SHORT receive (fewer bytes than asked)
// as having emptied the receive queue: the kernel's TCP receive copies until the queue is empty
// or the buffer full, and every byte that arrives later raises a new edge. The reactor then
// starts the next read without trying the receive, and the next edge (or one already seen)
// performs it. async_wait_drained() waits without the epoll_ctl for a caller that has just seen
// EAGAIN itself (OpenSSL reading the socket). Everything else is the Asio socket's own.
//
// Both rest on Asio's epoll reactor internals (boost/asio/detail), checked against the Boost
// version the build uses; with any other reactor or Boost version the class falls back to
// Asio's own operations, correct and one system call dearer.
namespace sluice::core {

// (SLUICE_NO_EDGE_TRIGGERED_READS forces the fallback: to measure the difference.)
#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) &&      \
    !defined(BOOST_ASIO_HAS_IOCP) && BOOST_VERSION >= 108100 && BOOST_VERSION < 108200 && \
    !defined(SLUICE_NO_EDGE_TRIGGERED_READS)
#define SLUICE_EDGE_TRIGGERED_READS 1
#else
#define SLUICE_EDGE_TRIGGERED_READS 0
#endif

#if SLUICE_EDGE_TRIGGERED_READS
namespace edge_detail {

namespace ad = boost::asio::detail;

/// Cancels one pending operation when its cancellation slot is signalled (what Asio's own
/// operations register, so `||` on awaitables cancels a read of this socket too).
class OpCancellation {
 public:
  OpCancellation(ad::reactor* reactor, ad::reactor::per_descriptor_data* data, int descriptor,
                 int op_type)
      : reactor_(reactor), data_(data), descriptor_(descriptor), op_type_(op_type) {}
  void operator()(boost::asio::cancellation_type_t type) {
    using boost::asio::cancellation_type;
    if (!!(type &
           (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total))) {
      reactor_->cancel_ops_by_key(descriptor_, *data_, op_type_, this);
    }
  }

 private:
  ad::reactor* reactor_;
  ad::reactor::per_descriptor_data* data_;
  int descriptor_;
  int op_type_;
};

/// The operation being started on this thread: a wait's perform() called from inside
/// reactor::start_op() (its speculative attempt) is told apart from one called on an event.
inline thread_local const void* t_starting = nullptr;

/// Completes a reactor operation's handler with (ec, bytes) or, for a wait, (ec), the way
/// Asio's operations do: the memory is freed before the upcall, which runs through the
/// handler's work tracking.
template <typename Op, typename Handler, typename IoExecutor, bool kWithBytes>
void complete_op(void* owner, Op* o) {
  typename Op::ptr p = {std::addressof(o->handler_), o, o};
  ad::handler_work<Handler, IoExecutor> w(std::move(o->work_));
  if constexpr (kWithBytes) {
    ad::binder2<Handler, boost::system::error_code, std::size_t> handler(o->handler_, o->ec_,
                                                                         o->bytes_transferred_);
    p.h = std::addressof(handler.handler_);
    p.reset();
    if (owner != nullptr) {
      ad::fenced_block b(ad::fenced_block::half);
      w.complete(handler, handler.handler_);
    }
  } else {
    ad::binder1<Handler, boost::system::error_code> handler(o->handler_, o->ec_);
    p.h = std::addressof(handler.handler_);
    p.reset();
    if (owner != nullptr) {
      ad::fenced_block b(ad::fenced_block::half);
      w.complete(handler, handler.handler_);
    }
  }
}

/// A receive into one buffer that reports one leaving the receive queue empty as exhausting
/// the socket. The kernel says how much is left (TCP_INQ, enabled on the socket): a short
/// receive alone would not do, since it also stops at a FIN whose edge may have passed.
template <typename Handler, typename IoExecutor>
class ReceiveOp : public ad::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(ReceiveOp);

  ReceiveOp(const boost::system::error_code& success_ec, int socket,
            boost::asio::mutable_buffer buffer, Handler& handler, const IoExecutor& io_ex)
      : ad::reactor_op(success_ec, &ReceiveOp::do_perform, &ReceiveOp::do_complete),
        socket_(socket),
        buffer_(buffer),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status do_perform(ad::reactor_op* base) {
    auto* o = static_cast<ReceiveOp*>(base);
    iovec iov{o->buffer_.data(), o->buffer_.size()};
    alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = 0;
    do {
      n = ::recvmsg(o->socket_, &msg, 0);
    } while (n < 0 && errno == EINTR);
    o->bytes_transferred_ = 0;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return not_done;  // the reactor queues it for the next edge
      }
      o->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
      return done;
    }
    if (n == 0) {
      o->ec_ = boost::asio::error::eof;
      return done_and_exhausted;
    }
    o->bytes_transferred_ = static_cast<std::size_t>(n);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ) {
        int left = 0;
        std::memcpy(&left, CMSG_DATA(c), sizeof(left));
        return left == 0 ? done_and_exhausted : done;  // (a pending FIN counts as 1 left)
      }
    }
    return done;  // not told: go on as Asio does
  }
  static void do_complete(void* owner, ad::operation* base, const boost::system::error_code&,
                          std::size_t) {
    complete_op<ReceiveOp, Handler, IoExecutor, true>(owner, static_cast<ReceiveOp*>(base));
  }

  int socket_;
  boost::asio::mutable_buffer buffer_;
  Handler handler_;
  ad::handler_work<Handler, IoExecutor> work_;
};

/// A wait for readiness whose caller has just seen the socket not ready: its speculative
/// attempt (inside start_op) is never done, so it is queued for the next edge without a call.
template <typename Handler, typename IoExecutor>
class DrainedWaitOp : public ad::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(DrainedWaitOp);

  DrainedWaitOp(const boost::system::error_code& success_ec, Handler& handler,
                const IoExecutor& io_ex)
      : ad::reactor_op(success_ec, &DrainedWaitOp::do_perform, &DrainedWaitOp::do_complete),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status do_perform(ad::reactor_op* base) { return t_starting == base ? not_done : done; }
  static void do_complete(void* owner, ad::operation* base, const boost::system::error_code&,
                          std::size_t) {
    complete_op<DrainedWaitOp, Handler, IoExecutor, false>(owner,
                                                           static_cast<DrainedWaitOp*>(base));
  }

  Handler handler_;
  ad::handler_work<Handler, IoExecutor> work_;
};

/// Starts reactor operation `p` of `op_type` on the socket or acceptor `impl` (Asio's
/// reactive_socket_service implementation) as Asio's own operations start: registered for
/// cancellation by its handler's slot, the descriptor made non-blocking first if it is not yet
/// (once), then handed to the reactor; `speculative` tries it at once.
template <typename Op, typename Impl>
void start_reactor_op(ad::reactor& reactor, Impl& impl, typename Op::ptr& p, int op_type,
                      bool speculative) {
  const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(p.p->handler_);
  auto slot = boost::asio::get_associated_cancellation_slot(p.p->handler_);
  if (slot.is_connected()) {
    p.p->cancellation_key_ = &slot.template emplace<OpCancellation>(&reactor, &impl.reactor_data_,
                                                                    impl.socket_, op_type);
  }
  if ((impl.state_ & ad::socket_ops::non_blocking) != 0 ||
      ad::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true, p.p->ec_)) {
    t_starting = p.p;
    reactor.start_op(op_type, impl.socket_, impl.reactor_data_, p.p, is_continuation, speculative);
    t_starting = nullptr;
  } else {
    reactor.post_immediate_completion(p.p, is_continuation);
  }
  p.v = p.p = nullptr;
}

/// The io_context's reactor for `io_object`, looked up once into `cached`.
template <typename IoObject>
ad::reactor& reactor_of(IoObject& io_object, void*& cached) {
  if (cached == nullptr) {
    cached = &boost::asio::use_service<ad::reactor>(io_object.get_executor().context());
  }
  return *static_cast<ad::reactor*>(cached);
}

}  // namespace edge_detail
#endif

/// Asio's stream socket with reads and waits that trust edge-triggered readiness (above).
/// Passes for the Asio socket everywhere (it is one); only async_read_some() of one buffer,
/// async_receive() of one buffer and async_wait_drained() differ.
template <typename Protocol, typename Executor>
class EdgeTriggeredSocket : public boost::asio::basic_stream_socket<Protocol, Executor> {
  using Base = boost::asio::basic_stream_socket<Protocol, Executor>;

 public:
  template <typename OtherExecutor>
  struct rebind_executor {
    using other = EdgeTriggeredSocket<Protocol, OtherExecutor>;
  };

  using Base::Base;
  /// Takes over an Asio socket (say, one an acceptor returned).
  explicit EdgeTriggeredSocket(Base&& socket) noexcept : Base(std::move(socket)) {}
  EdgeTriggeredSocket(EdgeTriggeredSocket&& other) noexcept
      : Base(std::move(other)),
        reactor_(std::exchange(other.reactor_, nullptr)),
        inq_(std::exchange(other.inq_, Inq::kUnknown)) {}
  EdgeTriggeredSocket& operator=(EdgeTriggeredSocket&& other) noexcept {
    Base::operator=(std::move(other));
    reactor_ = std::exchange(other.reactor_, nullptr);
    inq_ = std::exchange(other.inq_, Inq::kUnknown);
    return *this;
  }
  EdgeTriggeredSocket(const EdgeTriggeredSocket&) = delete;
  EdgeTriggeredSocket& operator=(const EdgeTriggeredSocket&) = delete;
  ~EdgeTriggeredSocket() = default;

  /// Takes `descriptor`, a connection that accept4() returned non-blocking and close-on-exec
  /// (core::EdgeTriggeredAcceptor's): Asio is told it is non-blocking already, so no `ioctl`
  /// precedes the first operation, and that no other descriptor shares its file, so closing it
  /// leaves the epoll registration to close() instead of an `epoll_ctl` (Asio assumes a
  /// descriptor it did not make may be a dup). On failure `ec` says why and the caller still
  /// owns `descriptor`.
  void adopt_accepted(const Protocol& protocol, int descriptor, boost::system::error_code& ec) {
    this->assign(protocol, descriptor, ec);
#if SLUICE_EDGE_TRIGGERED_READS
    if (!ec) {
      namespace ops = boost::asio::detail::socket_ops;
      auto& state = this->impl_.get_implementation().state_;
      state =
          static_cast<ops::state_type>((state & ~ops::possible_dup) | ops::internal_non_blocking);
    }
#endif
  }

  using Base::non_blocking;
  /// As Asio's, without its `ioctl` when the descriptor is non-blocking already: made so by
  /// accept4 (adopt_accepted()) or by Asio before its first asynchronous operation.
  void non_blocking(bool mode, boost::system::error_code& ec) {
#if SLUICE_EDGE_TRIGGERED_READS
    namespace ops = boost::asio::detail::socket_ops;
    auto& state = this->impl_.get_implementation().state_;
    if (mode && (state & ops::internal_non_blocking) != 0) {
      state = static_cast<ops::state_type>(state | ops::user_set_non_blocking);
      ec = {};
      return;
    }
#endif
    Base::non_blocking(mode, ec);
  }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
#if SLUICE_EDGE_TRIGGERED_READS
    if constexpr (std::is_convertible_v<const Buffers&, boost::asio::mutable_buffer>) {
      if (!counts_what_is_left()) {
        return Base::async_read_some(buffers, std::forward<Token>(token));
      }
      return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
          [this](auto handler, boost::asio::mutable_buffer buffer) {
            this->start_receive(std::move(handler), buffer);
          },
          token, boost::asio::mutable_buffer(buffers));
    } else {
      return Base::async_read_some(buffers, std::forward<Token>(token));
    }
#else
    return Base::async_read_some(buffers, std::forward<Token>(token));
#endif
  }

  template <typename Buffers, typename Token>
  auto async_receive(const Buffers& buffers, Token&& token) {
    return async_read_some(buffers, std::forward<Token>(token));
  }

  /// Waits until the socket is readable (or writable), for a caller that has just seen a
  /// receive (or send) on it fail with EAGAIN: no system call starts the wait. Any other caller
  /// must use async_wait(), or it may wait for an edge that has already passed.
  template <typename Token>
  auto async_wait_drained(typename Base::wait_type what, Token&& token) {
#if SLUICE_EDGE_TRIGGERED_READS
    if (what == Base::wait_read || what == Base::wait_write) {
      return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
          [this, what](auto handler) { this->start_wait(std::move(handler), what); }, token);
    }
#endif
    return Base::async_wait(what, std::forward<Token>(token));
  }

#if SLUICE_EDGE_TRIGGERED_READS
 private:
  /// The io_context's reactor, looked up once per socket (a socket stays on its context).
  boost::asio::detail::reactor& reactor() {
    return edge_detail::reactor_of(*this, reactor_);
  }

  /// Whether receives report what they leave in the queue (TCP_INQ, Linux 4.18), enabled on
  /// the first read of the connection. Not on a socket that is not TCP, nor on an older
  /// kernel: its reads are Asio's. (A socket closed and opened again keeps the state; a
  /// receive that is not told how much is left is never taken for exhausting the socket.)
  bool counts_what_is_left() {
    if (inq_ == Inq::kUnknown && this->is_open()) {
      const int on = 1;
      inq_ = ::setsockopt(this->native_handle(), SOL_TCP, TCP_INQ, &on, sizeof(on)) == 0
                 ? Inq::kOn
                 : Inq::kOff;
    }
    return inq_ == Inq::kOn;
  }

  template <typename Handler>
  void start_receive(Handler handler, boost::asio::mutable_buffer buffer) {
    using Op = edge_detail::ReceiveOp<Handler, Executor>;
    typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(boost::system::error_code(), this->impl_.get_implementation().socket_,
                       buffer, handler, this->impl_.get_executor());
    if (buffer.size() == 0) {  // nothing to read: done at once, as Asio does
      reactor().post_immediate_completion(p.p, false);
      p.v = p.p = nullptr;
      return;
    }
    edge_detail::start_reactor_op<Op>(reactor(), this->impl_.get_implementation(), p,
                                      boost::asio::detail::reactor::read_op, true);
  }

  template <typename Handler>
  void start_wait(Handler handler, typename Base::wait_type what) {
    using Op = edge_detail::DrainedWaitOp<Handler, Executor>;
    typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) Op(boost::system::error_code(), handler, this->impl_.get_executor());
    edge_detail::start_reactor_op<Op>(reactor(), this->impl_.get_implementation(), p,
                                      what == Base::wait_read
                                          ? boost::asio::detail::reactor::read_op
                                          : boost::asio::detail::reactor::write_op,
                                      true);
  }
#endif

 private:
  enum class Inq : unsigned char { kUnknown, kOn, kOff };
  [[maybe_unused]] void* reactor_ = nullptr;  ///< (the reactor, once looked up)
  [[maybe_unused]] Inq inq_ = Inq::kUnknown;
};

/// The workers' TCP socket: bound to one io_context's executor (the data path's `Socket`, the
/// TLS layer's `TcpSocket`).
using TcpSocket = EdgeTriggeredSocket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

}  // namespace sluice::core
