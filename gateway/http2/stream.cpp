// SPDX-License-Identifier: Apache-2.0
// One HTTP/2 stream (docs/http2.md): the request body handed to the data path under flow
// control, the response parsed back into frames. The connection around it: connection.cpp.
#include "gateway/http2/stream.hpp"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/error.hpp>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gateway/http2/connection.hpp"

namespace sluice::http2 {
namespace {

namespace net = boost::asio;
using boost::system::error_code;

using NvList = boost::container::small_vector<nghttp2_nv, 24>;

/// How HPACK is to carry a response field: a value new on every response (the request id)
/// goes as a literal the table never indexes, since adding it would only push out the entries
/// later responses reuse (`server`, `content-type`, ...) and cost an insertion and eviction per
/// response (docs/http2.md, "Header compression").
std::uint8_t field_flags(std::string_view name) noexcept {
  return name == "x-request-id" ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
}

/// The fields as nghttp2 takes them (`status` first unless empty), dropped ones left out.
/// `bodyless`: the response ends with these fields, so a `content-length: 0` says nothing
/// HEADERS with END_STREAM does not (and a gRPC client, which reads such a response as
/// trailers only, would show it as trailing metadata): left out.
NvList to_nv(std::string_view status, const FieldBlock& fields, bool bodyless = false) {
  NvList nv;
  const auto add = [&](std::string_view name, std::string_view value) {
    // nghttp2 copies names and values at submission; the pointers only live through the call.
    nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                  value.size(), field_flags(name)});
  };
  if (!status.empty()) {
    add(":status", status);
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (!fields.dropped(i) &&
        !(bodyless && fields.value(i) == "0" && fields.name(i) == "content-length")) {
      add(fields.name(i), fields.value(i));
    }
  }
  return nv;
}

}  // namespace

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

void Stream::settle_request_framing() {
  if (!chunked_in_ || !request_ended_ || in_.size() > kSettleLimit + kSettleLimit / 4) {
    return;
  }
  // in_ holds exactly the framing request_data() and request_end() wrote: "<hex>\r\n<data>\r\n"
  // per DATA frame, then "0\r\n\r\n".
  const std::string_view framed(static_cast<const char*>(in_.data().data()), in_.size());
  std::string& body = settled_;  // (kept with its capacity by the recycled stream object)
  body.clear();
  std::size_t at = 0;
  for (;;) {
    const std::size_t eol = framed.find("\r\n", at);
    if (eol == std::string_view::npos) {
      return;  // (not expected: nothing changes)
    }
    std::size_t size = 0;
    const auto [end, ec] = std::from_chars(framed.data() + at, framed.data() + eol, size, 16);
    if (ec != std::errc() || end != framed.data() + eol) {
      return;
    }
    if (size == 0) {
      break;
    }
    body.append(framed.substr(eol + 2, size));
    at = eol + 2 + size + 2;
  }
  if (body.size() > kSettleLimit) {
    return;
  }
  chunked_in_ = false;
  head_.build_into(head_bytes_, false, body.size());
  in_.clear();
  net::buffer_copy(in_.prepare(body.size()), net::buffer(body));
  in_.commit(body.size());
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

void Stream::take_head(int status, std::uint64_t body_length) {
  translator_.take_head(status, body_length);
  flush_head();
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
  const bool bodyless = response_ended_ && out_.size() == 0 && translator_.trailers().empty();
  const auto nv = to_nv({code.data(), static_cast<std::size_t>(code_size)}, translator_.fields(),
                        bodyless && !head_request_);
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

}  // namespace sluice::http2
