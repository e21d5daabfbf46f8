// SPDX-License-Identifier: Apache-2.0
#include "gateway/http2/connection.hpp"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/error.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace sluice::http2 {
namespace {

namespace net = boost::asio;
using boost::system::error_code;

constexpr std::uint32_t kHeaderTable = 4096;  // HPACK dynamic table, both ways
constexpr double kResetWindowSeconds = 10.0;  // max_stream_resets refill over this long

using NvList = boost::container::small_vector<nghttp2_nv, 24>;

/// The fields as nghttp2 takes them (`status` first unless empty), dropped ones left out.
NvList to_nv(std::string_view status, const FieldBlock& fields) {
  NvList nv;
  const auto add = [&](std::string_view name, std::string_view value) {
    // nghttp2 copies names and values at submission; the pointers only live through the call.
    nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                  value.size(), NGHTTP2_NV_FLAG_NONE});
  };
  if (!status.empty()) {
    add(":status", status);
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (!fields.dropped(i)) {
      add(fields.name(i), fields.value(i));
    }
  }
  return nv;
}

}  // namespace

// ---- Stream -------------------------------------------------------------------------------

Stream::Stream(Connection& connection) : connection_(connection) {}

void Stream::start(std::int32_t id, std::size_t max_header_bytes) {
  id_ = id;
  head_.clear(max_header_bytes);
  head_bytes_.clear();
  chunked_in_ = false;
  request_ended_ = false;
  serving_ = false;
  closed_ = false;
  // Buffers a large body grew are not kept for the next stream (an idle connection stays small).
  for (boost::beast::flat_buffer* buffer : {&in_, &out_}) {
    buffer->consume(buffer->size());
    if (buffer->capacity() > 4096) {
      *buffer = boost::beast::flat_buffer();
    }
  }
  unconsumed_ = 0;
  discarded_ = 0;
  answered_ = false;
  write_from_.clear();
  head_request_ = false;
  head_pending_ = false;
  final_status_ = 0;
  submitted_ = false;
  deferred_ = false;
  response_ended_ = false;
}

Stream::~Stream() = default;

Executor Stream::executor() const noexcept {
  return connection_.executor_;
}

void Stream::complete(Handler& handler, error_code ec, std::size_t n) {
  // Never inside the initiating call or an nghttp2 callback: through the worker's queue.
  // (A lambda, not net::append: Boost 1.81's any_completion_handler used as a token recurses.)
  net::post(connection_.executor_,
            [h = std::move(handler), ec, n]() mutable { std::move(h)(ec, n); });
}

void Stream::credit(std::size_t n) {
  const std::size_t c = std::min(n, unconsumed_);
  if (c == 0) {
    return;
  }
  unconsumed_ -= c;
  nghttp2_session_consume(connection_.session_, id_, c);
  connection_.host_.on_output();  // a WINDOW_UPDATE may be due
}

void Stream::read(net::mutable_buffer into, Handler handler) {
  if (into.size() == 0) {
    complete(handler, {}, 0);
  } else if (in_.size() > 0) {
    const std::size_t n = net::buffer_copy(into, in_.data());
    in_.consume(n);
    credit(n);
    complete(handler, {}, n);
  } else if (closed_) {
    complete(handler, net::error::connection_reset, 0);
  } else if (request_ended_) {
    complete(handler, net::error::eof, 0);
  } else {
    read_into_ = into;
    read_handler_.swap(handler);  // (not =: Boost 1.81's move assignment recurses)
  }
}

void Stream::take_buffered(boost::beast::flat_buffer& into) {
  const std::size_t n = in_.size();
  if (n == 0) {
    return;
  }
  net::buffer_copy(into.prepare(n), in_.data());
  into.commit(n);
  in_.consume(n);
  credit(n);
}

void Stream::request_data(std::string_view data) {
  if (!serving_) {  // nobody reads it any more: give the window back at once
    nghttp2_session_consume(connection_.session_, id_, data.size());
    discarded_ += data.size();
    if (answered_ && discarded_ > kDiscardLimit && !closed_) {
      // Answered, and still sending: past the limit, tell the client to stop (RFC 9113 §8.1).
      nghttp2_submit_rst_stream(connection_.session_, NGHTTP2_FLAG_NONE, id_, NGHTTP2_NO_ERROR);
      answered_ = false;  // once
    }
    return;
  }
  if (chunked_in_) {
    std::array<char, 24> line{};
    const int n = std::snprintf(line.data(), line.size(), "%zx\r\n", data.size());
    const auto add = [this](std::string_view bytes) {
      net::buffer_copy(in_.prepare(bytes.size()), net::buffer(bytes.data(), bytes.size()));
      in_.commit(bytes.size());
    };
    add({line.data(), static_cast<std::size_t>(n)});
    add(data);
    add("\r\n");
  } else {
    net::buffer_copy(in_.prepare(data.size()), net::buffer(data.data(), data.size()));
    in_.commit(data.size());
  }
  unconsumed_ += data.size();
  if (read_handler_) {
    const std::size_t n = net::buffer_copy(read_into_, in_.data());
    in_.consume(n);
    credit(n);
    complete(read_handler_, {}, n);
  }
}

void Stream::request_end() {
  if (request_ended_) {
    return;
  }
  request_ended_ = true;
  if (serving_ && chunked_in_) {
    constexpr std::string_view kLastChunk = "0\r\n\r\n";
    net::buffer_copy(in_.prepare(kLastChunk.size()), net::buffer(kLastChunk));
    in_.commit(kLastChunk.size());
  }
  if (read_handler_) {
    if (in_.size() > 0) {
      const std::size_t n = net::buffer_copy(read_into_, in_.data());
      in_.consume(n);
      complete(read_handler_, {}, n);
    } else {
      complete(read_handler_, net::error::eof, 0);
    }
  }
}

void Stream::request_headers_done(bool end_stream) {
  request_ended_ = end_stream;
  chunked_in_ = !end_stream && !head_.has_content_length();
  head_.build_into(head_bytes_, chunked_in_);
  head_request_ = head_.method() == "HEAD";
  translator_.reset(head_request_);
  serving_ = true;
  ++connection_.serving_;
  ++connection_.requests_;
  connection_.host_.on_request(*this);
}

std::size_t Stream::take(std::string_view bytes, error_code& ec) {
  if (closed_) {
    ec = net::error::connection_reset;
    return 0;
  }
  const std::size_t room = out_.size() >= kResponseBuffer ? 0 : kResponseBuffer - out_.size();
  const std::size_t n = std::min(bytes.size(), room);
  if (n == 0) {
    return 0;
  }
  if (!translator_.feed(bytes.substr(0, n))) {
    ec = boost::beast::http::error::bad_version;  // not an HTTP/1.1 response: nothing to relay
    close(NGHTTP2_INTERNAL_ERROR);
    nghttp2_submit_rst_stream(connection_.session_, NGHTTP2_FLAG_NONE, id_, NGHTTP2_INTERNAL_ERROR);
    connection_.host_.on_output();
    return 0;
  }
  if (submitted_ && deferred_ && (out_.size() > 0 || response_ended_)) {
    deferred_ = false;
    nghttp2_session_resume_data(connection_.session_, id_);
    connection_.host_.on_output();
  }
  return n;
}

std::size_t Stream::take_pending(error_code& ec) {
  std::size_t taken = 0;
  for (net::const_buffer& b : write_from_) {
    if (b.size() == 0) {
      continue;
    }
    const std::size_t n = take({static_cast<const char*>(b.data()), b.size()}, ec);
    taken += n;
    b += n;
    if (ec || b.size() > 0) {
      break;
    }
  }
  return taken;
}

void Stream::start_write(Handler handler) {
  error_code ec;
  const std::size_t n = take_pending(ec);
  flush_head();
  const bool empty = std::all_of(write_from_.begin(), write_from_.end(),
                                 [](const net::const_buffer& b) { return b.size() == 0; });
  if (n > 0 || ec || (empty && n == 0)) {
    complete(handler, ec, n);
  } else {
    write_handler_.swap(handler);
  }
}

void Stream::resume_write() {
  error_code ec;
  const std::size_t n = take_pending(ec);
  if (write_handler_ && (n > 0 || ec)) {
    complete(write_handler_, ec, n);
  }
}

void Stream::cancel() {
  if (read_handler_) {
    complete(read_handler_, net::error::operation_aborted, 0);
  }
  if (write_handler_) {
    complete(write_handler_, net::error::operation_aborted, 0);
  }
}

void Stream::on_head(int status, const FieldBlock& fields, bool final) {
  if (!final) {  // 1xx (100 Continue): a non-final HEADERS frame, now
    const std::string code = std::to_string(status);
    const auto nv = to_nv(code, fields);
    nghttp2_submit_headers(connection_.session_, NGHTTP2_FLAG_NONE, id_, nullptr, nv.data(),
                           nv.size(), nullptr);
    connection_.host_.on_output();
    return;
  }
  final_status_ = status;
  head_pending_ = true;  // submitted by flush_head(), once we know whether a body follows
}

void Stream::on_body(std::string_view bytes) {
  net::buffer_copy(out_.prepare(bytes.size()), net::buffer(bytes.data(), bytes.size()));
  out_.commit(bytes.size());
}

void Stream::on_end(const FieldBlock& /*trailers*/) {
  response_ended_ = true;
}

void Stream::flush_head() {
  if (!head_pending_ || closed_) {
    return;
  }
  std::array<char, 8> code{};
  const int code_size = std::snprintf(code.data(), code.size(), "%d", final_status_);
  const auto nv = to_nv({code.data(), static_cast<std::size_t>(code_size)}, translator_.fields());
  const bool bodyless = response_ended_ && out_.size() == 0 && translator_.trailers().empty();
  nghttp2_data_provider provider{};
  provider.source.ptr = this;
  provider.read_callback = [](nghttp2_session* /*session*/, std::int32_t /*stream_id*/,
                              std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                              nghttp2_data_source* source, void* /*user_data*/) -> ssize_t {
    return static_cast<Stream*>(source->ptr)->provide(buf, length, flags);
  };
  nghttp2_submit_response(connection_.session_, id_, nv.data(), nv.size(),
                          bodyless ? nullptr : &provider);
  submitted_ = true;
  head_pending_ = false;
  connection_.host_.on_output();
}

ssize_t Stream::provide(std::uint8_t* buf, std::size_t length, std::uint32_t* flags) {
  if (closed_) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  const std::size_t n = net::buffer_copy(net::buffer(buf, length), out_.data());
  out_.consume(n);
  if (out_.size() == 0 && response_ended_) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!translator_.trailers().empty()) {
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const auto nv = to_nv({}, translator_.trailers());
      nghttp2_submit_trailer(connection_.session_, id_, nv.data(), nv.size());
    }
  } else if (n == 0) {
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (write_handler_) {
    resume_write();  // room again: the writer's next bytes (it completes through the queue)
  }
  return static_cast<ssize_t>(n);
}

void Stream::end_response() {
  if (!translator_.started() || translator_.done() || !translator_.finish()) {
    return;
  }
  flush_head();
  if (submitted_ && deferred_) {
    deferred_ = false;
    nghttp2_session_resume_data(connection_.session_, id_);
    connection_.host_.on_output();
  }
}

void Stream::served() {
  serving_ = false;
  --connection_.serving_;
  end_response();
  if (!closed_ && (!translator_.done() || head_pending_)) {
    // The response was cut (the upstream failed mid-body, a deadline): the client must not
    // take what it got for the whole answer.
    nghttp2_submit_rst_stream(connection_.session_, NGHTTP2_FLAG_NONE, id_, NGHTTP2_INTERNAL_ERROR);
  }
  // What the client sent that nobody will read: its window back, the bytes gone.
  if (unconsumed_ > 0) {
    nghttp2_session_consume(connection_.session_, id_, unconsumed_);
    unconsumed_ = 0;
  }
  in_ = boost::beast::flat_buffer();
  connection_.host_.on_output();
  if (closed_) {
    connection_.erase(*this);  // recycles this
  }
}

void Stream::close(std::uint32_t /*error_code*/) {
  closed_ = true;
  if (read_handler_) {
    complete(read_handler_, net::error::connection_reset, 0);
  }
  if (write_handler_) {
    complete(write_handler_, net::error::connection_reset, 0);
  }
  if (!serving_) {
    connection_.erase(*this);  // recycles this
  }
}

// ---- Connection ---------------------------------------------------------------------------

struct Connection::Callbacks {
  static Connection& self(void* user_data) { return *static_cast<Connection*>(user_data); }

  static int on_begin_headers(nghttp2_session* /*session*/, const nghttp2_frame* frame,
                              void* user_data) {
    Connection& c = self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST ||
        c.aborted_ || c.serving_ >= 2 * std::size_t{c.settings_.max_concurrent_streams}) {
      return 0;  // no Stream: its fields are ignored and it is refused once they are in
    }
    nghttp2_session_set_stream_user_data(c.session_, frame->hd.stream_id,
                                         &c.open(frame->hd.stream_id));
    return 0;
  }

  static int on_header(nghttp2_session* /*session*/, const nghttp2_frame* frame,
                       const std::uint8_t* name, std::size_t namelen, const std::uint8_t* value,
                       std::size_t valuelen, std::uint8_t /*flags*/, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;  // request trailers: HTTP/1.1 upstreams get none (docs/http2.md)
    }
    if (Stream* stream = self(user_data).find(frame->hd.stream_id)) {
      stream->head_.add({reinterpret_cast<const char*>(name), namelen},
                        {reinterpret_cast<const char*>(value), valuelen});
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    Connection& c = self(user_data);
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS: {
        Stream* stream = c.find(frame->hd.stream_id);
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
          if (stream == nullptr) {
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                      NGHTTP2_REFUSED_STREAM);
          } else if (!stream->head_.oversized() && !stream->head_.well_formed()) {
            // A malformed request (RFC 9113 §8.1.1): a stream error, never served. The stream
            // is recycled when nghttp2 reports it closed.
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                      NGHTTP2_PROTOCOL_ERROR);
          } else {
            stream->request_headers_done(end_stream);
          }
        } else if (stream != nullptr && end_stream) {
          stream->request_end();
        }
        break;
      }
      case NGHTTP2_DATA:
        if (Stream* stream = c.find(frame->hd.stream_id); stream != nullptr && end_stream) {
          stream->request_end();
        }
        break;
      case NGHTTP2_RST_STREAM:
        if (!c.spend_reset()) {
          c.reason_ = "too many stream resets (rapid reset)";
          nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM);
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int on_data_chunk_recv(nghttp2_session* session, std::uint8_t /*flags*/,
                                std::int32_t stream_id, const std::uint8_t* data, std::size_t len,
                                void* user_data) {
    if (Stream* stream = self(user_data).find(stream_id)) {
      stream->request_data({reinterpret_cast<const char*>(data), len});
    } else {
      nghttp2_session_consume(session, stream_id, len);
    }
    return 0;
  }

  static int on_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      Stream* stream = self(user_data).find(frame->hd.stream_id);
      if (stream != nullptr && !stream->request_ended_) {
        // Answered before the request ended (a 413, a 429 on an upload): the rest of the body
        // is read and dropped up to kDiscardLimit (clients that take RST_STREAM NO_ERROR for a
        // failure then still see the answer), past it the stream is reset (request_data()).
        stream->answered_ = true;
        if (stream->discarded_ > kDiscardLimit) {
          nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                    NGHTTP2_NO_ERROR);
        }
      }
    }
    return 0;
  }

  static int on_stream_close(nghttp2_session* /*session*/, std::int32_t stream_id,
                             std::uint32_t error_code, void* user_data) {
    if (Stream* stream = self(user_data).find(stream_id)) {
      stream->close(error_code);
    }
    return 0;
  }
};

Connection::Connection(const Settings& settings, ConnectionHost& host, Executor executor,
                       const core::Clock& clock)
    : settings_(settings),
      host_(host),
      executor_(std::move(executor)),
      clock_(clock),
      reset_tokens_(settings.max_stream_resets),
      reset_refilled_(clock.now()) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &Callbacks::on_data_chunk_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::on_stream_close);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);  // credited as the data path reads
  nghttp2_option_set_max_deflate_dynamic_table_size(option, kHeaderTable);
  // nghttp2's own reset limiter stays as a backstop behind ours (spend_reset()).
  nghttp2_option_set_stream_reset_rate_limit(option, 2ULL * settings.max_stream_resets + 1000,
                                             settings.max_stream_resets / 5 + 33);
  nghttp2_session_server_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  const std::array<nghttp2_settings_entry, 4> entries{{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.max_header_bytes},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, kHeaderTable},
  }};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries.data(), entries.size());
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
}

Connection::~Connection() {
  nghttp2_session_del(session_);
  while (!streams_.empty()) {  // (only when the connection ends with streams not yet erased)
    Stream& stream = streams_.front();
    stream.unlink();
    delete &stream;  // NOLINT(cppcoreguidelines-owning-memory): owned through streams_
  }
}

Stream* Connection::find(std::int32_t id) const {
  // nghttp2 keeps the pointer while it knows the stream; a stream it has closed gets no more
  // frames, and whoever still serves it holds the object itself.
  return static_cast<Stream*>(nghttp2_session_get_stream_user_data(session_, id));
}

Stream& Connection::open(std::int32_t id) {
  std::unique_ptr<Stream> stream;
  if (spare_.empty()) {
    stream = std::make_unique<Stream>(*this);
  } else {
    stream = std::move(spare_.back());
    spare_.pop_back();
  }
  stream->start(id, settings_.max_header_bytes);
  Stream& s = *stream.release();  // owned through streams_ until erase()
  streams_.push_back(s);
  return s;
}

void Connection::erase(Stream& stream) {
  stream.unlink();
  nghttp2_session_set_stream_user_data(session_, stream.id(), nullptr);
  std::unique_ptr<Stream> owned(&stream);
  if (spare_.size() < kSpareStreams) {
    spare_.push_back(std::move(owned));
  }
}

bool Connection::spend_reset() {
  const core::TimePoint now = clock_.now();
  const double elapsed = std::chrono::duration<double>(now - reset_refilled_).count();
  reset_refilled_ = now;
  const double budget = settings_.max_stream_resets;
  reset_tokens_ = std::min(budget, reset_tokens_ + elapsed * budget / kResetWindowSeconds);
  if (reset_tokens_ < 1.0) {
    return false;
  }
  reset_tokens_ -= 1.0;
  return true;
}

bool Connection::receive(std::string_view bytes) {
  if (aborted_) {
    return false;
  }
  const ssize_t rv = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (rv < 0) {
    if (reason_.empty()) {
      reason_ = nghttp2_strerror(static_cast<int>(rv));
    }
    // nghttp2 leaves the GOAWAY to us after a fatal error: a flood (of CONTINUATION, SETTINGS,
    // PING acks...) gets ENHANCE_YOUR_CALM, a broken frame PROTOCOL_ERROR; a peer that never
    // spoke HTTP/2 (bad preface) gets nothing.
    if (rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS) {
      nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
    } else if (rv != NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
      nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
    }
    return false;
  }
  return reason_.empty();
}

void Connection::send(std::string& out, std::size_t limit) {
  // After abort_streams() the streams nghttp2 still knows may be gone: it must not call their
  // data sources any more.
  while (!aborted_ && out.size() < limit) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) {
      if (n < 0 && reason_.empty()) {
        reason_ = nghttp2_strerror(static_cast<int>(n));
      }
      return;
    }
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

bool Connection::wants_io() const {
  return nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0;
}

void Connection::shut_down() {
  if (shut_down_) {
    return;
  }
  shut_down_ = true;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  host_.on_output();
}

void Connection::abort_streams() {
  aborted_ = true;
  std::vector<Stream*> open;
  for (Stream& stream : streams_) {
    open.push_back(&stream);
  }
  for (Stream* stream : open) {  // (close() may recycle it)
    if (!stream->closed_) {
      stream->close(NGHTTP2_CANCEL);
    }
  }
}

}  // namespace sluice::http2
