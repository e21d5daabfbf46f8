// SPDX-License-Identifier: Apache-2.0
// UpstreamConnection's lifetime: a connection whose receiver (a suspended exchange, which holds
// the connection) still waits when the io_context shuts down must be freed with it, not leak
// in a cycle (LeakSanitizer caught this when a drain timeout cut a request waiting upstream).
#include "gateway/proxy/upstream/upstream_connection.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <memory_resource>

#include "tests/support/test_stream_ops.hpp"

namespace sluice::proxy {
namespace {

using testing::TestStream;
using Connection = UpstreamConnection<TestStream>;

TEST(UpstreamConnectionTest, ShuttingDownWhileAReceiverWaitsFreesTheConnection) {
  std::weak_ptr<Connection> weak;
  bool received = false;
  {
    boost::asio::io_context ioc{1};
    auto remote = std::make_unique<TestStream>(ioc.get_executor());
    auto connection = std::make_shared<Connection>(ioc.get_executor());
    connection->stream.connect(*remote);
    connection->watch(std::pmr::get_default_resource());
    // The receiver holds the connection, as the exchange's coroutine frame does.
    connection->async_receive([keep = connection, &received](boost::system::error_code,
                                                             std::size_t) { received = true; });
    weak = connection;
    connection.reset();
    ioc.poll();  // nothing arrives: the receiver keeps waiting
    EXPECT_FALSE(weak.expired());
  }  // the io_context goes with the read pending
  EXPECT_FALSE(received);
  EXPECT_TRUE(weak.expired());
}

TEST(UpstreamConnectionTest, AReceiverGetsTheWatchingReadsBytes) {
  boost::asio::io_context ioc{1};
  TestStream remote(ioc.get_executor());
  auto connection = std::make_shared<Connection>(ioc.get_executor());
  connection->stream.connect(remote);
  connection->watch(std::pmr::get_default_resource());
  std::size_t got = 0;
  connection->async_receive([&](boost::system::error_code ec, std::size_t n) {
    EXPECT_FALSE(ec);
    got = n;
  });
  boost::asio::write(remote, boost::asio::buffer("HTTP", 4));
  ioc.poll();
  EXPECT_EQ(got, 4U);
  EXPECT_EQ(connection->buffer.size(), 4U);
}

}  // namespace
}  // namespace sluice::proxy
