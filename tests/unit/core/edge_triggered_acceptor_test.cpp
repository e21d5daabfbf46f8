// SPDX-License-Identifier: Apache-2.0
// The edge-triggered acceptor (gateway/core/edge_triggered_acceptor.hpp) on real loopback
// connections: each connection, queued before the accept or arriving after it, lands in the
// peer non-blocking and close-on-exec with its address, and reads and writes like any other;
// an accept is cancellable and refuses an open peer, as Asio's does.
#include "gateway/core/edge_triggered_acceptor.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/wait.hpp"

namespace sluice::core {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

class EdgeTriggeredAcceptorTest : public ::testing::Test {
 protected:
  EdgeTriggeredAcceptorTest()
      : acceptor_(TcpAcceptor(asio::basic_socket_acceptor<tcp, asio::io_context::executor_type>(
            ioc_.get_executor(), {asio::ip::address_v4::loopback(), 0}))) {}

  /// Starts an accept into `peer`; its result lands in the returned slot.
  std::shared_ptr<std::optional<boost::system::error_code>> start_accept(TcpSocket& peer,
                                                                         tcp::endpoint& remote) {
    auto result = std::make_shared<std::optional<boost::system::error_code>>();
    acceptor_.async_accept(peer, remote,
                           [result](boost::system::error_code ec) { result->emplace(ec); });
    return result;
  }
  /// Runs the loop until `done` or 5 s have passed; true when done.
  template <typename Done>
  bool run_until(Done done) {
    return sluice::testing::run_until(ioc_, std::move(done));
  }
  boost::system::error_code accept(TcpSocket& peer, tcp::endpoint& remote) {
    auto result = start_accept(peer, remote);
    EXPECT_TRUE(run_until([&] { return result->has_value(); })) << "the accept never completed";
    return result->value_or(asio::error::timed_out);
  }
  /// A client connected to the acceptor (the kernel queues it until accepted).
  tcp::socket connect() {
    tcp::socket client(client_ioc_);
    client.connect(acceptor_.local_endpoint());
    return client;
  }

  asio::io_context ioc_;
  asio::io_context client_ioc_;  // the clients' blocking calls stay off the loop under test
  TcpAcceptor acceptor_;
};

TEST_F(EdgeTriggeredAcceptorTest, AQueuedConnectionArrivesNonBlockingCloseOnExecWithItsAddress) {
  tcp::socket client = connect();
  TcpSocket peer(ioc_);
  tcp::endpoint remote;
  ASSERT_FALSE(accept(peer, remote));
  ASSERT_TRUE(peer.is_open());
  EXPECT_EQ(remote, client.local_endpoint());
  EXPECT_EQ(peer.remote_endpoint(), client.local_endpoint());
  if (SLUICE_EDGE_TRIGGERED_READS) {  // (the fallback is Asio's accept, which does neither)
    const int descriptor = peer.native_handle();
    EXPECT_NE(::fcntl(descriptor, F_GETFL) & O_NONBLOCK, 0) << "accept4 made it non-blocking";
    EXPECT_NE(::fcntl(descriptor, F_GETFD) & FD_CLOEXEC, 0) << "and close-on-exec";
  }
  // Both ways, through the socket's own reads and Asio's writes.
  asio::write(client, asio::buffer(std::string("ping")));
  std::string got(4, '\0');
  std::optional<boost::system::error_code> read;
  asio::async_read(peer, asio::buffer(got),
                   [&](boost::system::error_code ec, std::size_t) { read = ec; });
  ASSERT_TRUE(run_until([&] { return read.has_value(); }));
  EXPECT_FALSE(*read);
  EXPECT_EQ(got, "ping");
  asio::write(peer, asio::buffer(std::string("pong")));
  std::string back(4, '\0');
  asio::read(client, asio::buffer(back));
  EXPECT_EQ(back, "pong");
}

TEST_F(EdgeTriggeredAcceptorTest, NonBlockingModeForItsUserIsTheDescriptorsOwn) {
  // Asked for (StreamOps::prepare does), non-blocking user mode is recorded without a system
  // call: the descriptor is non-blocking already. A read with nothing queued says so at once.
  tcp::socket client = connect();
  TcpSocket peer(ioc_);
  tcp::endpoint remote;
  ASSERT_FALSE(accept(peer, remote));
  EXPECT_FALSE(peer.non_blocking());
  boost::system::error_code ec;
  peer.non_blocking(true, ec);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(peer.non_blocking());
  char byte = 0;
  peer.read_some(asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, asio::error::would_block);
  peer.non_blocking(false, ec);  // and back, which Asio does with its own call
  EXPECT_FALSE(ec);
  EXPECT_FALSE(peer.non_blocking());
  asio::write(client, asio::buffer(std::string("x")));
  EXPECT_EQ(peer.read_some(asio::buffer(&byte, 1), ec), 1U);  // blocking: waits for it
  EXPECT_EQ(byte, 'x');
}

TEST_F(EdgeTriggeredAcceptorTest, AnAcceptStartedBeforeTheConnectionCompletesWhenItArrives) {
  TcpSocket peer(ioc_);
  tcp::endpoint remote;
  auto result = start_accept(peer, remote);
  ioc_.run_for(20ms);  // the accept tried once, found the queue empty and waits for an edge
  ASSERT_FALSE(result->has_value());
  tcp::socket client = connect();
  ASSERT_TRUE(run_until([&] { return result->has_value(); }));
  EXPECT_FALSE(**result);
  EXPECT_EQ(remote, client.local_endpoint());
}

TEST_F(EdgeTriggeredAcceptorTest, EveryConnectionQueuedAtOnceIsAcceptedOneAfterAnother) {
  // One edge for five connections: each accept after the first finds the next in the queue.
  std::vector<tcp::socket> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(connect());
  }
  for (const auto& client : clients) {
    TcpSocket peer(ioc_);
    tcp::endpoint remote;
    ASSERT_FALSE(accept(peer, remote));
    EXPECT_EQ(remote, client.local_endpoint());
  }
}

TEST_F(EdgeTriggeredAcceptorTest, AClosedConnectionsDescriptorServesTheNextOne) {
  // Closing leaves the epoll registration to close() (no epoll_ctl): the descriptor number the
  // kernel hands out again must be registered afresh and see its own events.
  for (int i = 0; i < 3; ++i) {
    tcp::socket client = connect();
    TcpSocket peer(ioc_);
    tcp::endpoint remote;
    ASSERT_FALSE(accept(peer, remote));
    asio::write(client, asio::buffer(std::string(1, static_cast<char>('a' + i))));
    char got = 0;
    std::optional<boost::system::error_code> read;
    peer.async_read_some(asio::buffer(&got, 1),
                         [&](boost::system::error_code ec, std::size_t) { read = ec; });
    ASSERT_TRUE(run_until([&] { return read.has_value(); }));
    EXPECT_FALSE(*read);
    EXPECT_EQ(got, 'a' + i);
    peer.close();
  }
}

TEST_F(EdgeTriggeredAcceptorTest, AnOpenPeerIsRefusedAndNoConnectionIsTaken) {
  tcp::socket client = connect();
  TcpSocket peer(ioc_);
  peer.open(tcp::v4());
  tcp::endpoint remote;
  EXPECT_EQ(accept(peer, remote), asio::error::already_open);
  TcpSocket fresh(ioc_);
  ASSERT_FALSE(accept(fresh, remote));  // the queued connection is still there
  EXPECT_EQ(remote, client.local_endpoint());
}

TEST_F(EdgeTriggeredAcceptorTest, APendingAcceptIsCancelledByItsSlotAndByClosingTheAcceptor) {
  TcpSocket peer(ioc_);
  tcp::endpoint remote;
  asio::cancellation_signal signal;
  std::optional<boost::system::error_code> cancelled;
  acceptor_.async_accept(peer, remote,
                         asio::bind_cancellation_slot(
                             signal.slot(), [&](boost::system::error_code ec) { cancelled = ec; }));
  ioc_.run_for(10ms);
  signal.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until([&] { return cancelled.has_value(); }));
  EXPECT_EQ(*cancelled, asio::error::operation_aborted);
  EXPECT_FALSE(peer.is_open());

  auto closed = start_accept(peer, remote);
  ioc_.run_for(10ms);
  acceptor_.close();
  ASSERT_TRUE(run_until([&] { return closed->has_value(); }));
  EXPECT_EQ(**closed, asio::error::operation_aborted);
}

}  // namespace
}  // namespace sluice::core
