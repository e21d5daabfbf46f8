// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nghttp2/nghttp2.h>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/intrusive/list.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/http2/stream.hpp"

// HTTP/2 to a backend (docs/grpc.md, "HTTP/2 to backends"): the client side of libnghttp2, and
// each request as a stream the exchange writes HTTP/1.1 to and reads HTTP/1.1 from, as the
// downstream streams do in the other direction (docs/decisions/0026-http2-upstream-streams.md).
// No socket I/O: the upstream session (gateway/proxy/upstream/h2_connector.hpp) feeds the
// connection the bytes it reads and writes the frames it takes. Confined to one worker's thread.
namespace sluice::http2 {

/// Finished stream objects a client connection keeps for reuse: as many as it usually has open
/// (a backend's streams come and go at that rate; a smaller spare list frees and allocates
/// again with every one).
constexpr std::size_t kSpareClientStreams = 128;

/// What a client connection asks of the session doing its I/O.
class ClientHost {
 public:
  /// Frames are waiting to be written.
  virtual void on_output() = 0;

 protected:
  ~ClientHost() = default;
};

class ClientConnection;
class ClientStream;

/// Gives a finished stream back to its connection (ClientConnection::open() hands out
/// recycled ones: a stream's buffers and strings keep their capacity from request to request).
struct RecycleStream {
  void operator()(ClientStream* stream) const noexcept;
};
/// A request stream as the exchange holds it.
using ClientStreamPtr = std::unique_ptr<ClientStream, RecycleStream>;

/// One request to the backend. Writes take the request as HTTP/1.1 bytes (Beast's parser turns
/// them into HEADERS and DATA: the request line and Host become pseudo-fields, connection-specific
/// fields are dropped, the chunked framing is removed); reads give the response as HTTP/1.1
/// bytes (its HEADERS as a head, its DATA chunked unless it has a Content-Length, its trailers
/// as the chunked trailer section). At most one read and one write pending, as on a socket;
/// completions go through the worker's queue. A reset before the response ends fails the read
/// with connection_reset, as a reset connection would. Owned by the exchange's upstream stream;
/// keeps its connection alive. Destroyed before its response ended, it resets the stream.
class ClientStream final : public boost::intrusive::list_base_hook<
                               boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  using Handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

  explicit ClientStream(Executor executor);
  ~ClientStream();
  ClientStream(const ClientStream&) = delete;
  ClientStream& operator=(const ClientStream&) = delete;

  [[nodiscard]] Executor executor() const noexcept { return executor_; }
  /// The stream's id once its head is submitted (0 before).
  [[nodiscard]] std::int32_t id() const noexcept { return id_; }
  /// Whether the response can still arrive (not reset, not closed by us).
  [[nodiscard]] bool is_open() const noexcept { return !closed_ || response_ended_; }
  /// The response ended with its END_STREAM.
  [[nodiscard]] bool response_ended() const noexcept { return response_ended_; }
  /// Response bytes (as HTTP/1.1) that arrived and were not read yet.
  [[nodiscard]] std::size_t ready() const noexcept { return in_.size(); }

  /// The response as HTTP/1.1 bytes: what is here (completes at once), or the next to arrive;
  /// eof after the end, connection_reset when the stream or the connection was reset first.
  void read(boost::asio::mutable_buffer into, Handler handler);
  /// The request as HTTP/1.1 bytes: takes all of them; completes when the bytes waiting to be
  /// sent are under kRequestBuffer (at once, usually). A malformed request fails with
  /// bad_message, a stream already gone with connection_reset.
  template <typename Buffers>
  void write(const Buffers& buffers, Handler handler) {
    boost::system::error_code ec;
    const std::size_t taken = write_now(buffers, ec);
    finish_write(std::move(handler), ec, taken);
  }
  /// The write's fast path: takes all of `buffers` now (the request is buffered for nghttp2
  /// anyway); sets `ec` as write() would fail. The pieces are joined before the parser sees
  /// them: a head gathered from many small buffers is parsed once, not once per piece.
  template <typename Buffers>
  std::size_t write_now(const Buffers& buffers, boost::system::error_code& ec) {
    if (!accepts(ec)) {
      return 0;
    }
    std::size_t taken = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::const_buffer b(*it);
      if (!discarding()) {
        pending_.append(static_cast<const char*>(b.data()), b.size());
      }
      taken += b.size();
    }
    return parse(ec) ? taken : 0;
  }
  /// Fails the pending read and write with operation_aborted (a deadline expired).
  void cancel();
  /// Done with the stream: one whose response has not ended is reset (CANCEL).
  void close();

  /// Bytes of request body buffered per stream before a write waits.
  static constexpr std::size_t kRequestBuffer = 64U * 1024U;
  /// What a recycled stream object keeps of its buffers' capacity.
  static constexpr std::size_t kRecycledBuffer = 16U * 1024U;

 private:
  friend class ClientConnection;
  friend struct RecycleStream;

  /// Makes this (new or recycled) object a fresh stream of `connection`.
  void start(std::shared_ptr<ClientConnection> connection);
  /// Done with: reset unless its response ended, and every state back to empty (capacity kept).
  void finish();

  /// Beast's request parser, reporting the request to the stream as it goes.
  class RequestReader final : public boost::beast::http::basic_parser<true> {
   public:
    explicit RequestReader(ClientStream& owner);

   private:
    void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                         boost::beast::string_view target, int version,
                         boost::beast::error_code& ec) override;
    void on_response_impl(int code, boost::beast::string_view reason, int version,
                          boost::beast::error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                       boost::beast::string_view value, boost::beast::error_code& ec) override;
    void on_header_impl(boost::beast::error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                           boost::beast::error_code& ec) override;
    std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                              boost::beast::error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                   boost::beast::error_code& ec) override;
    void on_finish_impl(boost::beast::error_code& ec) override;

    ClientStream& owner_;
  };

  /// Whether request bytes can still be written (`ec`: connection_reset when not).
  bool accepts(boost::system::error_code& ec) const;
  /// Whether written request bytes go nowhere (the backend answered without them).
  [[nodiscard]] bool discarding() const noexcept { return request_ended_ || closed_; }
  /// Runs the parser over the bytes written (`pending_`): false with `ec` when malformed.
  bool parse(boost::system::error_code& ec);
  void finish_write(Handler handler, boost::system::error_code ec, std::size_t n);
  void complete(Handler& handler, boost::system::error_code ec, std::size_t n);
  bool submit_head(bool has_body);
  void request_body(std::string_view bytes);
  void request_end();
  void resume_data();
  ssize_t provide(std::uint8_t* buf, std::size_t length, std::uint32_t* flags);
  void credit(std::size_t n);

  // From the connection's callbacks.
  void response_field(std::string_view name, std::string_view value);
  void response_headers_done(bool end_stream, bool trailers);
  void response_data(std::string_view data);
  void response_end();
  void on_close(std::uint32_t error_code);
  /// The backend's answer is malformed: RST_STREAM with `error_code`; reads fail as on a reset.
  void reset_stream(std::uint32_t error_code);
  /// The connection is gone (or went away before the stream was submitted).
  void fail();
  void wake_reader();
  void wake_writer();

  std::shared_ptr<ClientConnection> connection_;
  Executor executor_;
  std::int32_t id_ = 0;
  bool closed_ = false;  ///< the protocol closed the stream, or we reset it
  bool reset_ = false;   ///< ... before the response ended

  // The request, as written.
  std::optional<RequestReader> reader_;
  std::string pending_;  ///< request bytes the parser could not take yet (a partial line)
  std::string method_;
  std::string target_;
  std::string authority_;
  FieldBlock request_fields_;
  std::string body_;  ///< request body bytes not framed yet
  std::size_t body_sent_ = 0;
  bool request_ended_ = false;
  bool deferred_ = false;  ///< the data source waits for bytes
  Handler write_handler_;
  std::size_t write_taken_ = 0;

  // The response, as read.
  int status_ = 0;
  std::string fields_;           ///< the response's or the trailers' fields as HTTP/1.1 lines
  std::string scratch_;          ///< a response head or trailer section being written
  std::vector<nghttp2_nv> nva_;  ///< the request's fields as nghttp2 takes them
  bool has_length_ = false;
  bool chunked_ = false;
  bool bodyless_ = false;  ///< 204, 304, or the answer to HEAD
  bool head_seen_ = false;
  bool response_ended_ = false;
  boost::beast::flat_buffer in_;  ///< the response as HTTP/1.1, not read yet
  std::size_t unconsumed_ = 0;    ///< DATA bytes not credited back to the backend yet
  Handler read_handler_;
  boost::asio::mutable_buffer read_into_;
  bool wake_due_ = false;  ///< in the connection's woken_ list
};

/// The client side of one HTTP/2 connection to a backend: libnghttp2's client session and the
/// streams on it. `tls` decides the `:scheme` (https or http). Shared by its streams (each one
/// holds it) and its session; the host is let go by detach() when the session ends.
class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  ClientConnection(ClientHost& host, Executor executor, bool tls);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  /// A new stream, submitted when its head is written. Null when the connection cannot take one
  /// (going away, gone).
  ClientStreamPtr open();
  /// Whether one more stream fits: not going away or gone, fewer than `max` streams (and than
  /// the backend's SETTINGS_MAX_CONCURRENT_STREAMS) open, counting `reserved` ones promised.
  [[nodiscard]] bool can_open(std::uint32_t max, std::size_t reserved = 0) const;
  /// Streams open (opened, not finished).
  [[nodiscard]] std::size_t streams() const noexcept { return streams_count_; }
  /// The backend sent GOAWAY: streams it accepted finish, no new ones start here.
  [[nodiscard]] bool going_away() const noexcept { return going_away_; }
  [[nodiscard]] bool gone() const noexcept { return gone_; }

  /// Feeds bytes read from the backend. Returns false when the connection is over (its
  /// error: reason()).
  bool receive(std::string_view bytes);
  /// Appends frames waiting to be sent to `out`, up to about `limit` bytes.
  void send(std::string& out, std::size_t limit);
  /// Whether the protocol still expects to read or write.
  [[nodiscard]] bool wants_io() const;
  /// The connection is gone: every stream's read and write fail with connection_reset, and
  /// the host is not called again.
  void abort();
  /// Why receive() returned false, or what the backend's GOAWAY said (empty otherwise).
  [[nodiscard]] std::string_view reason() const noexcept { return reason_; }

 private:
  friend class ClientStream;
  friend struct RecycleStream;
  struct Callbacks;  ///< nghttp2's callbacks (client_callbacks.cpp)
  static nghttp2_session_callbacks* new_callbacks();
  /// The data source of request bodies (it finds the stream by its id).
  static nghttp2_data_source_read_callback body_source();

  ClientStream* find(std::int32_t id) const;
  void output();
  void forget(ClientStream& stream);
  /// Keeps a finished stream's object for the next open() (up to kSpareClientStreams).
  void recycle(std::unique_ptr<ClientStream> stream);

  ClientHost* host_;
  Executor executor_;
  bool tls_;
  nghttp2_session* session_ = nullptr;
  boost::intrusive::list<ClientStream, boost::intrusive::constant_time_size<false>> streams_;
  std::size_t streams_count_ = 0;
  /// The submitted streams by id: nghttp2's callbacks find them here (a stream gone early is
  /// simply not found, whatever nghttp2 still has queued for it).
  std::unordered_map<std::int32_t, ClientStream*> ids_;
  std::vector<std::unique_ptr<ClientStream>> spare_;  ///< finished stream objects for reuse
  /// Inside receive(): a stream's read completes after all the bytes read have been taken in,
  /// so a response whose HEADERS and DATA came in one read is read whole, in one completion.
  bool receiving_ = false;
  std::vector<ClientStream*> woken_;  ///< streams to wake when receive() is done
  bool going_away_ = false;
  bool gone_ = false;
  std::string reason_;
};

}  // namespace sluice::http2
