// SPDX-License-Identifier: Apache-2.0
// The edge-triggered socket's reads and waits (gateway/core/edge_triggered_socket.hpp) on real
// loopback connections: each completes when its bytes (or the end) arrive, whenever that is,
// and the operations are cancellable and take their memory where the handler says.
#include "gateway/core/edge_triggered_socket.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <memory_resource>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/wait.hpp"

namespace sluice::core {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct ReadResult {
  boost::system::error_code ec;
  std::size_t n = 0;
};

/// A connected pair on loopback: `server` is the socket under test, `client` a plain one.
class EdgeTriggeredSocketTest : public ::testing::Test {
 protected:
  EdgeTriggeredSocketTest() : acceptor_(ioc_, {asio::ip::address_v4::loopback(), 0}) {
    client.connect(acceptor_.local_endpoint());
    acceptor_.accept(server);
  }

  /// Starts a read of up to `size` bytes into `data`; the result lands in the returned slot.
  std::shared_ptr<std::optional<ReadResult>> start_read(std::size_t size) {
    auto result = std::make_shared<std::optional<ReadResult>>();
    data.resize(size);
    server.async_read_some(asio::buffer(data.data(), size),
                           [result](boost::system::error_code ec, std::size_t n) {
                             result->emplace(ReadResult{ec, n});
                           });
    return result;
  }
  /// Runs the loop until `done` or 5 s have passed; true when done.
  template <typename Done>
  bool run_until(Done done) {
    return sluice::testing::run_until(ioc_, std::move(done));
  }
  ReadResult read(std::size_t size) {
    auto result = start_read(size);
    EXPECT_TRUE(run_until([&] { return result->has_value(); })) << "the read never completed";
    return result->value_or(ReadResult{asio::error::timed_out, 0});
  }
  void send(const std::string& bytes) { asio::write(client, asio::buffer(bytes)); }
  /// Waits (outside the loop) until the server's receive queue holds `bytes` bytes or more.
  void wait_until_queued(std::size_t bytes) {
    for (int i = 0; i < 500 && server.available() < bytes; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  TcpSocket server{ioc_};
  tcp::socket client{ioc_};
  std::vector<char> data;
};

TEST_F(EdgeTriggeredSocketTest, AReadAfterAShortReadCompletesWhenMoreArrives) {
  send("abc");
  const ReadResult first = read(64);
  ASSERT_FALSE(first.ec);
  EXPECT_EQ(std::string(data.data(), first.n), "abc");

  auto second = start_read(64);  // the queue is empty: this one waits for the next edge
  ioc_.restart();
  ioc_.poll();
  EXPECT_FALSE(second->has_value());
  send("defg");
  ASSERT_TRUE(run_until([&] { return second->has_value(); }));
  EXPECT_FALSE((*second)->ec);
  EXPECT_EQ(std::string(data.data(), (*second)->n), "defg");
}

TEST_F(EdgeTriggeredSocketTest, BytesAndTheEndArrivingTogetherAreBothRead) {
  // One edge brings "abc" and the FIN behind it to a pending read. Its receive returns the
  // three bytes only (it stops at the FIN) and no edge will follow: the socket must not be
  // taken for empty, or the end would never be seen.
  auto first = start_read(64);
  ioc_.restart();
  ioc_.poll();  // pending: nothing has arrived
  ASSERT_FALSE(first->has_value());
  send("abc");
  client.shutdown(tcp::socket::shutdown_send);
  wait_until_queued(3);
  std::this_thread::sleep_for(20ms);  // (the FIN behind the bytes)
  ASSERT_TRUE(run_until([&] { return first->has_value(); }));
  ASSERT_FALSE((*first)->ec);
  EXPECT_EQ(std::string(data.data(), (*first)->n), "abc");
  const ReadResult second = read(64);
  EXPECT_EQ(second.ec, asio::error::eof);
}

TEST_F(EdgeTriggeredSocketTest, TheEndArrivingLaterEndsAWaitingRead) {
  send("abc");
  ASSERT_FALSE(read(64).ec);
  auto second = start_read(64);
  ioc_.restart();
  ioc_.poll();
  client.shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(run_until([&] { return second->has_value(); }));
  EXPECT_EQ((*second)->ec, asio::error::eof);
}

TEST_F(EdgeTriggeredSocketTest, AFullBufferLeavesTheRestToTheNextReads) {
  const std::string bytes(100, 'x');
  send(bytes);
  wait_until_queued(bytes.size());
  std::size_t total = 0;
  while (total < bytes.size()) {
    const ReadResult r = read(10);  // each fills its buffer: more is left, no edge will say so
    ASSERT_FALSE(r.ec);
    total += r.n;
  }
  EXPECT_EQ(total, bytes.size());
  auto next = start_read(10);
  send("y");
  ASSERT_TRUE(run_until([&] { return next->has_value(); }));
  EXPECT_EQ((*next)->n, 1U);
}

TEST_F(EdgeTriggeredSocketTest, AWaitAfterEagainCompletesWhenBytesArrive) {
  server.non_blocking(true);
  std::array<char, 16> buffer{};
  boost::system::error_code ec;
  EXPECT_EQ(server.read_some(asio::buffer(buffer), ec), 0U);
  ASSERT_EQ(ec, asio::error::would_block);  // what OpenSSL sees before it asks for a wait
  std::optional<boost::system::error_code> waited;
  server.async_wait_drained(tcp::socket::wait_read,
                            [&](boost::system::error_code e) { waited = e; });
  ioc_.restart();
  ioc_.poll();
  EXPECT_FALSE(waited.has_value());
  send("z");
  ASSERT_TRUE(run_until([&] { return waited.has_value(); }));
  EXPECT_FALSE(*waited);
  EXPECT_EQ(server.read_some(asio::buffer(buffer)), 1U);
}

TEST_F(EdgeTriggeredSocketTest, AWaitForRoomCompletesWhenThePeerReads) {
  server.non_blocking(true);
  const std::vector<char> chunk(64 * 1024, 'w');
  boost::system::error_code ec;
  std::size_t sent = 0;
  while (!ec) {  // fill the send queue and the peer's receive queue
    sent += server.write_some(asio::buffer(chunk), ec);
  }
  ASSERT_EQ(ec, asio::error::would_block);
  std::optional<boost::system::error_code> waited;
  server.async_wait_drained(tcp::socket::wait_write,
                            [&](boost::system::error_code e) { waited = e; });
  ioc_.restart();
  ioc_.poll();
  EXPECT_FALSE(waited.has_value());
  std::vector<char> sink(sent);
  asio::read(client, asio::buffer(sink));  // all of it: the kernel frees room
  ASSERT_TRUE(run_until([&] { return waited.has_value(); }));
  EXPECT_FALSE(*waited);
}

TEST_F(EdgeTriggeredSocketTest, CancellingTheSocketAbortsAPendingReadAndWait) {
  auto pending = start_read(16);
  ioc_.restart();
  ioc_.poll();
  server.cancel();
  ASSERT_TRUE(run_until([&] { return pending->has_value(); }));
  EXPECT_EQ((*pending)->ec, asio::error::operation_aborted);

  std::optional<boost::system::error_code> waited;
  server.async_wait_drained(tcp::socket::wait_read,
                            [&](boost::system::error_code e) { waited = e; });
  server.cancel();
  ASSERT_TRUE(run_until([&] { return waited.has_value(); }));
  EXPECT_EQ(*waited, asio::error::operation_aborted);
}

TEST_F(EdgeTriggeredSocketTest, ACancellationSlotAbortsOnlyItsOwnOperation) {
  asio::cancellation_signal signal;
  std::optional<boost::system::error_code> read_ec;
  std::array<char, 16> buffer{};
  server.async_read_some(
      asio::buffer(buffer),
      asio::bind_cancellation_slot(signal.slot(),
                                   [&](boost::system::error_code e, std::size_t) { read_ec = e; }));
  ioc_.restart();
  ioc_.poll();
  signal.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until([&] { return read_ec.has_value(); }));
  EXPECT_EQ(*read_ec, asio::error::operation_aborted);

  asio::cancellation_signal wait_signal;
  std::optional<boost::system::error_code> waited;
  server.async_wait_drained(
      tcp::socket::wait_read,
      asio::bind_cancellation_slot(wait_signal.slot(),
                                   [&](boost::system::error_code e) { waited = e; }));
  wait_signal.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until([&] { return waited.has_value(); }));
  EXPECT_EQ(*waited, asio::error::operation_aborted);
  send("ok");  // the socket itself is fine
  const ReadResult after = read(16);
  EXPECT_FALSE(after.ec);
  EXPECT_EQ(after.n, 2U);
}

/// Counts what it hands out (the pooled allocator the data path binds to its operations).
class CountingResource : public std::pmr::memory_resource {
 public:
  int allocations = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    ++allocations;
    return std::pmr::new_delete_resource()->allocate(bytes, align);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
    std::pmr::new_delete_resource()->deallocate(p, bytes, align);
  }
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override {
    return this == &other;
  }
};

TEST_F(EdgeTriggeredSocketTest, OperationsTakeTheirMemoryFromTheHandlersAllocator) {
  CountingResource counting;
  const std::pmr::polymorphic_allocator<std::byte> allocator(&counting);
  std::optional<std::size_t> got;
  std::array<char, 16> buffer{};
  server.async_read_some(
      asio::buffer(buffer),
      asio::bind_allocator(allocator, [&](boost::system::error_code, std::size_t n) { got = n; }));
  std::optional<boost::system::error_code> waited;
  server.async_wait_drained(
      tcp::socket::wait_write,
      asio::bind_allocator(allocator, [&](boost::system::error_code e) { waited = e; }));
  EXPECT_EQ(counting.allocations, 2);
  send("a");
  ASSERT_TRUE(run_until([&] { return got.has_value() && waited.has_value(); }));
  EXPECT_EQ(*got, 1U);
}

}  // namespace
}  // namespace sluice::core
