// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nghttp2/nghttp2.h>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/intrusive/list.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http2/request_head.hpp"
#include "gateway/http2/response_translator.hpp"

// The streams of an HTTP/2 connection (docs/http2.md): each one a request as HTTP/1.1 bytes the
// data path reads through a StreamChannel (stream_channel.hpp), and its response as HTTP/1.1
// bytes the data path writes, parsed back into frames. The connection that owns them and drives
// libnghttp2: connection.hpp. No socket I/O; confined to one worker's thread.
namespace sluice::http2 {

using Executor = boost::asio::io_context::executor_type;

/// A listener's HTTP/2 limits (docs/http2.md, "Protections").
struct Settings {
  std::uint32_t max_concurrent_streams = 128;
  std::uint32_t max_header_bytes = 16384;  ///< a request's header block, decoded
  std::uint32_t max_stream_resets = 200;   ///< client RST_STREAMs per 10 s (burst and rate)
};

constexpr std::uint32_t kStreamWindow = 256U * 1024U;  ///< request bytes buffered per stream
constexpr std::uint32_t kConnectionWindow = 1U << 20;  ///< ... and per connection
constexpr std::size_t kResponseBuffer = 64U * 1024U;   ///< response bytes waiting per stream
constexpr std::size_t kDiscardLimit = 1U << 20;    ///< request bytes dropped after an early answer
constexpr std::size_t kSpareStreams = 16;          ///< stream objects a connection keeps for reuse
constexpr std::size_t kSettleLimit = 64U * 1024U;  ///< settle_request_framing(): largest body

class Connection;

/// What a connection asks of its session.
class ConnectionHost {
 public:
  /// A request's head is complete: serve it (every stream's request, in arrival order).
  virtual void on_request(class Stream& stream) = 0;
  /// Frames are waiting to be written.
  virtual void on_output() = 0;
  /// A GOAWAY with `error_code` (RFC 9113 §7) is being sent, whoever decided it (sluice, or
  /// libnghttp2 answering a broken frame itself); `reason` says why, in words.
  virtual void on_goaway_sent(std::uint32_t error_code, std::string_view reason) = 0;

 protected:
  ~ConnectionHost() = default;
};

/// One stream: the request as HTTP/1.1 bytes to read, the response as HTTP/1.1 bytes to write.
/// At most one read and one write pending, as on a socket. Owned by its connection; lives until
/// both the protocol closed it and its request was served (served()).
class Stream final : public ResponseListener,
                     public boost::intrusive::list_base_hook<
                         boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  using Handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

  explicit Stream(Connection& connection);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  [[nodiscard]] std::int32_t id() const noexcept { return id_; }
  [[nodiscard]] Executor executor() const noexcept;
  /// The request head as HTTP/1.1 (valid once the connection handed the stream over).
  [[nodiscard]] std::string_view head_bytes() const noexcept { return head_bytes_; }
  /// The head was over max_header_bytes: answer 431.
  [[nodiscard]] bool oversized() const noexcept { return head_.oversized(); }
  /// The protocol closed the stream (a reset, or the connection ended).
  [[nodiscard]] bool closed() const noexcept { return closed_; }

  /// The request body as HTTP/1.1 framing: `into` gets what is here (completes at once), or the
  /// next bytes to arrive; end of stream is net::error::eof, a reset connection_reset.
  void read(boost::asio::mutable_buffer into, Handler handler);
  /// The response bytes: takes what fits now (completes at once) or waits for room.
  template <typename Buffers>
  void write(const Buffers& buffers, Handler handler) {
    write_from_.clear();
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      write_from_.emplace_back(*it);
    }
    start_write(std::move(handler));
  }
  /// As much of `buffers` as fits now, without waiting; sets `ec` when the stream is gone.
  template <typename Buffers>
  std::size_t write_now(const Buffers& buffers, boost::system::error_code& ec) {
    std::size_t taken = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::const_buffer b(*it);
      const std::size_t n = take({static_cast<const char*>(b.data()), b.size()}, ec);
      taken += n;
      if (ec || n < b.size()) {
        break;
      }
    }
    flush_head();
    return taken;
  }
  /// Whether the response head may come as fields (take_head()) instead of HTTP/1.1 bytes:
  /// the stream is open and no byte of its response has been written.
  [[nodiscard]] bool can_take_head() const noexcept {
    return !closed_ && translator_.can_take_head();
  }
  /// Where the response head's fields go before take_head() (emptied here).
  [[nodiscard]] FieldBlock& response_fields() noexcept { return translator_.head_fields(); }
  /// The final response head as `status` and response_fields(), its body of `body_length`
  /// bytes to follow through write() and write_now() as they are (docs/http2.md, "One stream,
  /// one HTTP/1.1 request"). Only when can_take_head().
  void take_head(int status, std::uint64_t body_length);
  /// Before the request is served: a body without a length that has already arrived whole (its
  /// END_STREAM is in, at most kSettleLimit bytes) is given its Content-Length instead of the
  /// chunked framing, so it goes upstream with the head in one write rather than streamed
  /// (a unary gRPC call's message, a small POST).
  void settle_request_framing();
  /// Moves the request body bytes already here into `into` (the head's buffer).
  void take_buffered(boost::beast::flat_buffer& into);
  /// Fails the pending read and write with operation_aborted (a deadline expired).
  void cancel();
  /// The writer is done: a response delimited by its end ends here.
  void end_response();
  /// The request was served: the response is complete (the stream ends when it is sent) or the
  /// stream is reset. The stream may be destroyed by this call.
  void served();

 private:
  friend class Connection;

  void on_head(int status, const FieldBlock& fields, bool final) override;
  void on_body(std::string_view bytes) override;
  void on_end(const FieldBlock& trailers) override;

  /// Makes this (new or recycled) object stream `id`'s: every state back to the start.
  void start(std::int32_t id, std::size_t max_header_bytes);

  std::size_t take(std::string_view bytes, boost::system::error_code& ec);
  std::size_t take_pending(boost::system::error_code& ec);
  void credit(std::size_t n);
  void start_write(Handler handler);
  void resume_write();
  void flush_head();
  void complete(Handler& handler, boost::system::error_code ec, std::size_t n);
  void close(std::uint32_t error_code);
  void request_headers_done(bool end_stream);
  void request_data(std::string_view data);
  void request_end();
  ssize_t provide(std::uint8_t* buf, std::size_t length, std::uint32_t* flags);

  Connection& connection_;
  std::int32_t id_ = 0;
  RequestHead head_{0};
  std::string head_bytes_;
  bool chunked_in_ = false;
  bool request_ended_ = false;  ///< the client's END_STREAM arrived
  bool serving_ = false;        ///< handed to the session, not served yet
  bool closed_ = false;
  boost::beast::flat_buffer in_;  ///< request body bytes (framed) not read yet
  std::string settled_;           ///< settle_request_framing()'s body, unframed
  std::size_t unconsumed_ = 0;    ///< DATA bytes not credited back to the client's window yet
  std::size_t discarded_ = 0;     ///< DATA bytes dropped once nobody reads them
  bool answered_ = false;         ///< the response ended before the request did
  Handler read_handler_;
  boost::asio::mutable_buffer read_into_;
  Handler write_handler_;
  boost::container::small_vector<boost::asio::const_buffer, 4> write_from_;
  ResponseTranslator translator_{*this};
  bool head_request_ = false;
  bool head_pending_ = false;  ///< the final head is parsed (translator_.fields()), not submitted
  int final_status_ = 0;
  bool submitted_ = false;
  bool deferred_ = false;  ///< the data source waits for bytes
  bool response_ended_ = false;
  boost::beast::flat_buffer out_;  ///< response body bytes not framed yet
};

}  // namespace sluice::http2
