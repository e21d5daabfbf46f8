// SPDX-License-Identifier: Apache-2.0
// The one relay template, on its own: a body from one in-memory stream to another, in either
// framing, re-chunked or not, with read and write failures and a read deadline.
#include "gateway/proxy/exchange/relay.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <memory_resource>
#include <optional>
#include <string>
#include <utility>

#include "tests/support/manual_clock.hpp"
#include "tests/support/test_stream_ops.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;
using testing::TestStream;

/// A response head parsed from `from`'s buffer, and a relay of its body to `to`.
class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    to_.connect(sink_);
    from_.connect(source_);
  }

  /// Parses `head` (already in the read buffer), then relays; `more` arrives from the source
  /// afterwards, then the source closes when `close_after`.
  RelayResult relay(std::string head_and_start, std::string_view more, bool chunked_out,
                    bool close_after = false, bool skip_body = false) {
    buffer_.commit(boost::asio::buffer_copy(buffer_.prepare(head_and_start.size()),
                                            boost::asio::buffer(head_and_start)));
    std::size_t scanned = 0;
    const std::size_t end = http1::find_head_end(
        {static_cast<const char*>(buffer_.data().data()), buffer_.size()}, scanned);
    parser_.emplace();
    parser_->skip(skip_body);
    boost::system::error_code ec;
    parser_->put({static_cast<const char*>(buffer_.data().data()), end}, ec);
    EXPECT_FALSE(ec);
    pending_.add_copy("HEAD|");
    std::optional<RelayResult> result;
    boost::asio::co_spawn(
        ioc_,
        relay_body(*parser_, end, ReadEnd<TestStream>{from_, buffer_, read_deadline_, 1s},
                   WriteEnd<TestStream>{to_, write_deadline_, 1s}, pending_, chunked_out, clock_,
                   &ops_),
        [&](const std::exception_ptr&, RelayResult r) { result = r; });
    run();
    if (!more.empty()) {
      boost::asio::write(source_, boost::asio::buffer(more.data(), more.size()));
      run();
    }
    if (close_after) {
      source_.close();
      run();
    }
    if (!result) {
      clock_.advance(1s);  // a relay still waiting hits its read deadline
      sweep_.sweep(clock_.now());
      run();
    }
    EXPECT_TRUE(result);
    return result.value_or(RelayResult{});
  }
  void run() {
    ioc_.restart();
    ioc_.poll();
  }
  [[nodiscard]] std::string written() const { return std::string(sink_.str()); }

  testing::ManualClock clock_;
  boost::asio::io_context ioc_{1};
  std::pmr::unsynchronized_pool_resource ops_;
  DeadlineSweep sweep_{ioc_.get_executor(), clock_};
  TestStream from_{ioc_.get_executor()};
  TestStream source_{ioc_.get_executor()};
  TestStream to_{ioc_.get_executor()};
  TestStream sink_{ioc_.get_executor()};
  beast::flat_buffer buffer_;
  std::optional<http1::ResponseParser> parser_;
  http1::GatherList pending_;
  Deadline read_deadline_{sweep_, &StreamOps<TestStream>::cancel_void, &from_};
  Deadline write_deadline_{sweep_, &StreamOps<TestStream>::cancel_void, &to_};
};

TEST_F(RelayTest, ALengthDelimitedBodyGoesAsItIsWithTheHeadInTheFirstWrite) {
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234", "56789", false);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.wrote);
  EXPECT_EQ(r.body_bytes, 10U);
  EXPECT_EQ(written(), "HEAD|0123456789");
  EXPECT_EQ(buffer_.size(), 0U);  // everything relayed was consumed
}

TEST_F(RelayTest, AChunkedBodyIsReChunkedPieceByPieceWithoutItsHopByHopTrailer) {
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
                              "2;ext=1\r\nde\r\n0\r\nTrailer: x\r\n\r\n", true);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.body_bytes, 5U);
  EXPECT_EQ(written(), "HEAD|3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
}

TEST_F(RelayTest, AChunkedResponseKeepsItsForwardableTrailers) {
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
                              "0\r\ngrpc-status: 0\r\nSet-Cookie: s=1\r\nTE: trailers\r\n"
                              "X-Checksum: 42\r\n\r\n",
                              true);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(written(), "HEAD|3\r\nabc\r\n0\r\ngrpc-status: 0\r\nX-Checksum: 42\r\n\r\n");
}

/// `count` chunks of two bytes each ("00", "01", ...), as one read brings them, and the bytes
/// they carry.
std::pair<std::string, std::string> many_chunks(int count) {
  std::string chunks;
  std::string body;
  for (int i = 0; i < count; ++i) {
    const std::string piece{static_cast<char>('0' + i / 10), static_cast<char>('0' + i % 10)};
    chunks += "2\r\n" + piece + "\r\n";
    body += piece;
  }
  return {chunks, body};
}

TEST_F(RelayTest, MoreChunksThanOneWriteTakesAreAllRelayedBeforeTheSourceIsReadAgain) {
  // An HTTP/2 upstream stream whose DATA frames and trailers all arrived in one read (a server
  // stream under load), then its end: the chunks past kMaxPiecesPerWrite and the trailers are
  // in the read buffer already, and the next read gets only eof.
  const int count = static_cast<int>(kMaxPiecesPerWrite) + 8;
  const auto [chunks, body] = many_chunks(count);
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                              chunks + "0\r\ngrpc-status: 0\r\n\r\n", false,
                              /*close_after=*/true);
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.read_error) << r.read_error.message();
  EXPECT_EQ(r.body_bytes, body.size());
  EXPECT_EQ(written(), "HEAD|" + body);
  EXPECT_EQ(parser_->grpc_status(), 0);
}

TEST_F(RelayTest, MoreChunksThanOneWriteTakesDoNotWaitForBytesTheSourceNeverSends) {
  // The same from a kept-alive HTTP/1.1 upstream: it sent the whole response and waits for the
  // next request, so a read before the buffered end is parsed would wait until the deadline.
  const auto [chunks, body] = many_chunks(static_cast<int>(kMaxPiecesPerWrite) * 2 + 1);
  const RelayResult r =
      relay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunks + "0\r\n\r\n", true);
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.read_error) << r.read_error.message();
  EXPECT_EQ(r.body_bytes, body.size());
  EXPECT_EQ(written(), "HEAD|" + chunks + "0\r\n\r\n");
  EXPECT_EQ(buffer_.size(), 0U);
}

TEST_F(RelayTest, AChunkedBodyCanBeUnchunked) {
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                              "3\r\nabc\r\n0\r\n\r\n", false);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(written(), "HEAD|abc");
}

TEST_F(RelayTest, ABodyDelimitedByClosingEndsAtTheCloseAndIsChunked) {
  const RelayResult r = relay("HTTP/1.1 200 OK\r\n\r\nhel", "lo", true, /*close_after=*/true);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(written(), "HEAD|3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n");
}

TEST_F(RelayTest, ABodyCutShortIsAReadErrorAfterWhatArrived) {
  const RelayResult r =
      relay("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n012", "", false, /*close_after=*/true);
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(r.read_error);
  EXPECT_TRUE(r.wrote);
  EXPECT_EQ(r.body_bytes, 3U);
  EXPECT_EQ(written(), "HEAD|012");
}

TEST_F(RelayTest, BadChunkingIsAReadErrorBeforeAnythingIsWritten) {
  const RelayResult r =
      relay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", "", true);
  EXPECT_TRUE(r.read_error);
  EXPECT_FALSE(r.wrote);
  EXPECT_EQ(written(), "");
}

TEST_F(RelayTest, ASilentSourceHitsTheReadDeadline) {
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "", false);
  EXPECT_EQ(r.read_error, beast::error::timeout);
  EXPECT_TRUE(r.wrote);  // the head went out first
}

TEST_F(RelayTest, AFailingSinkIsAWriteError) {
  to_.close();  // the connection to the client is gone
  const RelayResult r = relay("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "", false);
  EXPECT_TRUE(r.write_error);
  EXPECT_FALSE(r.wrote);
  EXPECT_EQ(r.body_bytes, 0U);
}

TEST_F(RelayTest, AHeadOnlyResponseIsJustTheHead) {
  const RelayResult r =
      relay("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "", false, false, /*skip_body=*/true);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(written(), "HEAD|");
}

}  // namespace
}  // namespace sluice::proxy
