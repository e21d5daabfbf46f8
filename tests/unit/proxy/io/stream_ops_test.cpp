// SPDX-License-Identifier: Apache-2.0
// StreamOps<Socket>::write_now over a real loopback TCP pair: a head in many small pieces
// leaves as one contiguous write with the same bytes, and a write the socket takes only in part
// is finished by write_rest() from where it stopped.
#include "gateway/proxy/io/stream_ops.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gateway/http1/gather_list.hpp"

namespace sluice::proxy {
namespace {

class StreamOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net::basic_socket_acceptor<tcp, Executor> acceptor(
        ioc_.get_executor(), tcp::endpoint(net::ip::address_v4::loopback(), 0));
    client_.connect(acceptor.local_endpoint());
    acceptor.accept(server_);
    StreamOps<Socket>::prepare(client_);
  }

  /// Up to `n` bytes read from the server side, waiting at most 5 s for them (a write that
  /// loses bytes makes the comparison fail, not the test hang).
  std::string receive(std::size_t n) {
    std::string out;
    server_.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      pollfd ready{server_.native_handle(), POLLIN, 0};
      ::poll(&ready, 1, 50);
      std::array<char, 4096> chunk{};
      boost::system::error_code ec;
      const std::size_t got =
          server_.read_some(net::buffer(chunk.data(), std::min(chunk.size(), n - out.size())), ec);
      if (ec && ec != net::error::would_block) {
        break;
      }
      out.append(chunk.data(), got);
    }
    return out;
  }

  /// A head-like gather list of `pieces` pieces, and the bytes it stands for.
  static std::string fill(http1::GatherList& list, std::vector<std::string>& storage, int pieces) {
    std::string expected;
    for (int i = 0; i < pieces; ++i) {
      storage.push_back("Field-" + std::to_string(i) + ": value\r\n");
    }
    for (const std::string& s : storage) {
      list.add(s);  // separate strings: one buffer each
      expected += s;
    }
    return expected;
  }

  net::io_context ioc_{1};
  Socket client_{ioc_.get_executor()};
  Socket server_{ioc_.get_executor()};
};

TEST_F(StreamOpsTest, ManySmallPiecesLeaveAsOneWriteWithTheSameBytes) {
  http1::GatherList list;
  std::vector<std::string> storage;
  storage.reserve(20);
  const std::string expected = fill(list, storage, 20);
  ASSERT_GT(list.buffers().size(), 2U);
  ASSERT_LE(expected.size(), StreamOps<Socket>::kFlatten);
  const WriteStart w = write_now(client_, list.buffers());
  ASSERT_FALSE(w.ec);
  EXPECT_TRUE(w.done);
  EXPECT_EQ(w.written, expected.size());
  EXPECT_EQ(receive(expected.size()), expected);
}

TEST_F(StreamOpsTest, AWriteTakenInPartIsFinishedFromWhereItStopped) {
  // Fill the socket's send path until it takes nothing more, so the head is taken in part.
  client_.set_option(net::socket_base::send_buffer_size(4096));
  server_.set_option(net::socket_base::receive_buffer_size(4096));
  std::string filler(1024, 'x');
  std::size_t queued = 0;
  for (;;) {
    const WriteStart w = write_now(client_, net::buffer(filler));
    ASSERT_FALSE(w.ec);
    queued += w.written;
    if (!w.done) {
      break;
    }
  }
  http1::GatherList list;
  std::vector<std::string> storage;
  storage.reserve(40);
  const std::string expected = fill(list, storage, 40);
  const WriteStart w = write_now(client_, list.buffers());
  ASSERT_FALSE(w.ec);
  ASSERT_FALSE(w.done);
  EXPECT_LT(w.written, expected.size());
  auto rest = net::co_spawn(
      ioc_, write_rest(client_, list.buffers(), w.written, std::pmr::get_default_resource()),
      net::use_future);
  std::string received;
  std::thread reader([&] { received = receive(queued + expected.size()); });
  ioc_.run();
  reader.join();
  EXPECT_FALSE(rest.get());
  EXPECT_EQ(received.substr(queued), expected);
}

}  // namespace
}  // namespace sluice::proxy
