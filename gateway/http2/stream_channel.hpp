// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>

#include "gateway/http2/connection.hpp"

namespace sluice::http2 {

/// One HTTP/2 stream as the data path's client stream (docs/architecture.md, "Streams"): reads
/// give the request as HTTP/1.1 bytes, writes take the response as HTTP/1.1 bytes, so the
/// session's steps and the exchange serve a stream as they serve an HTTP/1.1 connection with
/// one request (docs/http2.md). Completions go through the worker's queue, never inside the
/// initiating call. A handle: the stream outlives it (Stream::served() comes last).
class StreamChannel {
 public:
  using executor_type = Executor;

  explicit StreamChannel(Stream& stream) noexcept : stream_(&stream) {}

  [[nodiscard]] executor_type get_executor() const noexcept { return stream_->executor(); }
  [[nodiscard]] Stream& stream() const noexcept { return *stream_; }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    boost::asio::mutable_buffer into;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      if (boost::asio::mutable_buffer b(*it); b.size() != 0) {
        into = b;
        break;
      }
    }
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [](auto handler, Stream* stream, boost::asio::mutable_buffer to) {
          stream->read(to, Stream::Handler(std::move(handler)));
        },
        token, stream_, into);
  }

  template <typename Buffers, typename Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [](auto handler, Stream* stream, const Buffers& from) {
          stream->write(from, Stream::Handler(std::move(handler)));
        },
        token, stream_, buffers);
  }

 private:
  Stream* stream_;
};

}  // namespace sluice::http2
