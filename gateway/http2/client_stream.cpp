// SPDX-License-Identifier: Apache-2.0
// One request to an HTTP/2 backend (docs/grpc.md, "HTTP/2 to backends"): the HTTP/1.1 request
// the exchange writes, parsed into HEADERS and DATA; the response's frames written as the
// HTTP/1.1 response the exchange reads. The connection: client_connection.cpp.
#include <array>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <charconv>
#include <cstring>
#include <vector>

#include "gateway/http2/client_connection.hpp"

namespace sluice::http2 {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr std::size_t kMaxRequestHead = 64U * 1024U;  // the exchange has checked it already

nghttp2_nv field(std::string_view name, std::string_view value) {
  // nghttp2_submit_request() copies names and values.
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), NGHTTP2_NV_FLAG_NONE};
}

void append_hex(std::string& out, std::size_t n) {
  std::array<char, 20> digits{};
  const auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), n, 16);
  out.append(digits.data(), end);
}

}  // namespace

ClientStream::RequestReader::RequestReader(ClientStream& owner) : owner_(owner) {
  header_limit(kMaxRequestHead);
  body_limit(boost::none);  // the exchange enforces the route's body limit
  eager(true);
}

void ClientStream::RequestReader::on_request_impl(http::verb /*method*/,
                                                  boost::beast::string_view method_str,
                                                  boost::beast::string_view target, int /*version*/,
                                                  boost::beast::error_code& ec) {
  if (method_str == "CONNECT") {
    ec = http::error::bad_method;  // a tunnel is not a stream request (docs/grpc.md)
    return;
  }
  owner_.method_.assign(method_str.data(), method_str.size());
  owner_.target_.assign(target.data(), target.size());
}

void ClientStream::RequestReader::on_response_impl(int /*code*/,
                                                   boost::beast::string_view /*reason*/,
                                                   int /*version*/, boost::beast::error_code& ec) {
  ec = http::error::bad_version;  // (a request parser never sees a status line)
}

void ClientStream::RequestReader::on_field_impl(http::field name,
                                                boost::beast::string_view name_string,
                                                boost::beast::string_view value,
                                                boost::beast::error_code& /*ec*/) {
  if (is_header_done()) {
    return;  // request trailers: HTTP/2 backends get none, as HTTP/1.1 ones (docs/grpc.md)
  }
  if (name == http::field::host) {
    owner_.authority_.assign(value.data(), value.size());
  } else {
    owner_.request_fields_.add({name_string.data(), name_string.size()},
                               {value.data(), value.size()});
  }
}

void ClientStream::RequestReader::on_header_impl(boost::beast::error_code& ec) {
  const auto length = content_length();
  if (!owner_.submit_head(chunked() || (length && *length > 0))) {
    ec = http::error::bad_target;
  }
}

void ClientStream::RequestReader::on_body_init_impl(
    const boost::optional<std::uint64_t>& /*content_length*/, boost::beast::error_code& /*ec*/) {}

std::size_t ClientStream::RequestReader::on_body_impl(boost::beast::string_view body,
                                                      boost::beast::error_code& /*ec*/) {
  owner_.request_body({body.data(), body.size()});
  return body.size();
}

void ClientStream::RequestReader::on_chunk_header_impl(std::uint64_t /*size*/,
                                                       boost::beast::string_view /*extensions*/,
                                                       boost::beast::error_code& /*ec*/) {}

std::size_t ClientStream::RequestReader::on_chunk_body_impl(std::uint64_t /*remain*/,
                                                            boost::beast::string_view body,
                                                            boost::beast::error_code& /*ec*/) {
  owner_.request_body({body.data(), body.size()});
  return body.size();
}

void ClientStream::RequestReader::on_finish_impl(boost::beast::error_code& /*ec*/) {
  owner_.request_end();
}

ClientStream::ClientStream(Executor executor) : executor_(std::move(executor)) {}

ClientStream::~ClientStream() {
  if (connection_) {
    close();
  }
}

void ClientStream::start(std::shared_ptr<ClientConnection> connection) {
  connection_ = std::move(connection);
  reader_.emplace(*this);
}

void ClientStream::finish() {
  close();
  cancel();  // (a handler still here is the exchange's, which is done with the stream)
  if (wake_due_) {
    std::erase(connection_->woken_, this);
    wake_due_ = false;
  }
  id_ = 0;
  closed_ = false;
  reset_ = false;
  reader_.reset();
  pending_.clear();
  method_.clear();
  target_.clear();
  authority_.clear();
  request_fields_.clear();
  body_.clear();
  body_sent_ = 0;
  request_ended_ = false;
  deferred_ = false;
  write_taken_ = 0;
  status_ = 0;
  fields_.clear();
  has_length_ = false;
  chunked_ = false;
  bodyless_ = false;
  head_seen_ = false;
  response_ended_ = false;
  in_.clear();
  if (in_.capacity() > kRecycledBuffer) {
    in_.shrink_to_fit();  // after a large response: a spare object keeps little
  }
  if (body_.capacity() > kRecycledBuffer) {
    body_.shrink_to_fit();
  }
  unconsumed_ = 0;
  read_into_ = {};
}

void ClientStream::complete(Handler& handler, error_code ec, std::size_t n) {
  // Never inside the initiating call or an nghttp2 callback: through the worker's queue.
  // (A lambda, not net::append: Boost 1.81's any_completion_handler used as a token recurses.)
  Handler h;
  h.swap(handler);  // (not =: Boost 1.81's move assignment recurses)
  net::post(executor_, [h = std::move(h), ec, n]() mutable { std::move(h)(ec, n); });
}

bool ClientStream::accepts(error_code& ec) const {
  if (reset_ || (closed_ && !response_ended_)) {
    ec = net::error::connection_reset;
    return false;
  }
  return true;
}

bool ClientStream::parse(error_code& ec) {
  if (discarding()) {
    pending_.clear();
    return true;
  }
  std::string_view data = pending_;
  while (!data.empty() && !reader_->is_done()) {
    boost::beast::error_code pec;
    const std::size_t n = reader_->put(net::buffer(data.data(), data.size()), pec);
    data.remove_prefix(n);
    if (pec == http::error::need_more) {
      break;
    }
    if (pec) {
      ec = pec;  // (the exchange wrote it: this is not expected to happen)
      close();
      return false;
    }
    if (n == 0) {
      break;
    }
  }
  pending_.erase(0, pending_.size() - data.size());
  resume_data();
  return true;
}

void ClientStream::finish_write(Handler handler, error_code ec, std::size_t n) {
  if (!ec && body_.size() - body_sent_ > kRequestBuffer) {
    write_taken_ = n;
    write_handler_.swap(handler);  // until the body buffered drains (provide())
    return;
  }
  complete(handler, ec, n);
}

bool ClientStream::submit_head(bool has_body) {
  std::string_view path = target_;
  std::string_view authority = authority_;
  std::string_view scheme = connection_->tls_ ? "https" : "http";
  if (!path.empty() && path.front() != '/' && path != "*") {  // absolute form
    const auto colon = path.find("://");
    if (colon == std::string_view::npos) {
      return false;
    }
    const std::string_view rest = path.substr(colon + 3);
    const auto slash = rest.find('/');
    authority = rest.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  }
  request_fields_.drop_connection_specific();
  std::vector<nghttp2_nv>& nva = nva_;  // (kept with its capacity from request to request)
  nva.clear();
  nva.push_back(field(":method", method_));
  nva.push_back(field(":scheme", scheme));
  if (!authority.empty()) {
    nva.push_back(field(":authority", authority));
  }
  nva.push_back(field(":path", path));
  for (std::size_t i = 0; i < request_fields_.size(); ++i) {
    if (!request_fields_.dropped(i)) {
      nva.push_back(field(request_fields_.name(i), request_fields_.value(i)));
    }
  }
  // Trailers are welcome: gRPC's status comes in them, and servers ask for this field.
  nva.push_back(field("te", "trailers"));
  nghttp2_data_provider provider{};
  provider.read_callback = ClientConnection::body_source();
  const std::int32_t id =
      nghttp2_submit_request(connection_->session_, nullptr, nva.data(), nva.size(),
                             has_body ? &provider : nullptr, nullptr);
  if (id <= 0) {
    return false;
  }
  id_ = id;
  connection_->ids_.emplace(id, this);
  request_ended_ = !has_body;
  connection_->output();
  return true;
}

void ClientStream::request_body(std::string_view bytes) {
  body_.append(bytes);
}

void ClientStream::request_end() {
  request_ended_ = true;
}

void ClientStream::resume_data() {
  if (deferred_ && id_ > 0 && !closed_ && !connection_->gone_) {
    deferred_ = false;
    nghttp2_session_resume_data(connection_->session_, id_);
    connection_->output();
  }
}

ssize_t ClientStream::provide(std::uint8_t* buf, std::size_t length, std::uint32_t* flags) {
  const std::size_t available = body_.size() - body_sent_;
  if (available == 0 && !request_ended_) {
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  const std::size_t n = std::min(length, available);
  std::memcpy(buf, body_.data() + body_sent_, n);
  body_sent_ += n;
  if (body_sent_ == body_.size()) {
    body_.clear();
    body_sent_ = 0;
  } else if (body_sent_ >= kRequestBuffer) {
    body_.erase(0, body_sent_);
    body_sent_ = 0;
  }
  if (request_ended_ && body_.empty()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  wake_writer();
  return static_cast<ssize_t>(n);
}

void ClientStream::wake_writer() {
  if (write_handler_ && (closed_ || body_.size() - body_sent_ <= kRequestBuffer)) {
    complete(write_handler_, reset_ ? error_code(net::error::connection_reset) : error_code(),
             write_taken_);
  }
}

void ClientStream::read(net::mutable_buffer into, Handler handler) {
  read_into_ = into;
  read_handler_.swap(handler);
  wake_reader();
}

void ClientStream::wake_reader() {
  if (!read_handler_) {
    return;
  }
  if (connection_->receiving_) {  // after the rest of what was read (ClientConnection::receive)
    if (!wake_due_) {
      wake_due_ = true;
      connection_->woken_.push_back(this);
    }
    return;
  }
  if (read_into_.size() == 0) {
    complete(read_handler_, {}, 0);
  } else if (in_.size() > 0) {
    const std::size_t n = net::buffer_copy(read_into_, in_.data());
    in_.consume(n);
    credit(n);
    complete(read_handler_, {}, n);
  } else if (reset_) {
    complete(read_handler_, net::error::connection_reset, 0);
  } else if (response_ended_) {
    complete(read_handler_, net::error::eof, 0);
  }
}

void ClientStream::credit(std::size_t n) {
  const std::size_t c = std::min(n, unconsumed_);
  if (c == 0 || connection_->gone_) {
    return;
  }
  unconsumed_ -= c;
  // (For a stream already closed this credits the connection alone.)
  nghttp2_session_consume(connection_->session_, id_, c);
  connection_->output();  // a WINDOW_UPDATE may be due
}

void ClientStream::cancel() {
  if (read_handler_) {
    complete(read_handler_, net::error::operation_aborted, 0);
  }
  if (write_handler_) {
    complete(write_handler_, net::error::operation_aborted, 0);
  }
}

void ClientStream::close() {
  if (!closed_) {
    closed_ = true;
    if (!response_ended_) {
      reset_ = true;
    }
    if (id_ > 0 && !connection_->gone_) {
      nghttp2_submit_rst_stream(connection_->session_, NGHTTP2_FLAG_NONE, id_, NGHTTP2_CANCEL);
      connection_->output();
    }
  }
  connection_->forget(*this);
  wake_reader();
  wake_writer();
}

void ClientStream::response_field(std::string_view name, std::string_view value) {
  if (name == ":status") {
    std::from_chars(value.data(), value.data() + value.size(), status_);
    return;
  }
  if (!name.empty() && name.front() == ':') {
    return;
  }
  if (name == "content-length") {
    has_length_ = true;
  }
  fields_.append(name).append(": ").append(value).append("\r\n");
}

void ClientStream::response_headers_done(bool end_stream, bool trailers) {
  std::string& text = scratch_;  // (kept with its capacity from response to response)
  text.clear();
  if (trailers) {
    if (chunked_) {  // (a body with a Content-Length has nowhere to put them: dropped)
      text.append("0\r\n").append(fields_).append("\r\n");
    }
  } else if (status_ < 100 || status_ > 999) {
    // (nghttp2 checks for three digits only: "099" gets here.) No HTTP/1.1 response has such a
    // status line: the answer is malformed, and the stream is reset as a broken one would be.
    fields_.clear();
    reset_stream(NGHTTP2_PROTOCOL_ERROR);
    return;
  } else if (status_ < 200) {
    fields_.clear();  // an interim response: the exchange waits for the final one
    has_length_ = false;
    return;
  } else {
    head_seen_ = true;
    // 204, 304 and the answer to HEAD have no body in HTTP/1.1 whatever follows them: no
    // framing is written for them, and DATA or trailers after them are not passed on.
    bodyless_ = status_ == 204 || status_ == 304 || method_ == "HEAD";
    chunked_ = !end_stream && !has_length_ && !bodyless_;
    text.append("HTTP/1.1 ").append(std::to_string(status_)).append(" ");
    const auto reason = http::obsolete_reason(static_cast<http::status>(status_));
    text.append(reason.data(), reason.size()).append("\r\n").append(fields_);
    if (chunked_) {
      text.append("transfer-encoding: chunked\r\n");
    } else if (end_stream && !has_length_ && status_ != 204 && status_ != 304 &&
               method_ != "HEAD") {
      text.append("content-length: 0\r\n");
    }
    text.append("\r\n");
  }
  fields_.clear();
  const auto out = in_.prepare(text.size());
  net::buffer_copy(out, net::buffer(text));
  in_.commit(text.size());
  if (end_stream) {
    response_ended_ = true;
  }
  wake_reader();
}

void ClientStream::reset_stream(std::uint32_t error_code) {
  if (!closed_ && id_ > 0 && !connection_->gone_) {
    nghttp2_submit_rst_stream(connection_->session_, NGHTTP2_FLAG_NONE, id_, error_code);
    connection_->output();
  }
  closed_ = true;
  reset_ = true;
  connection_->forget(*this);
  wake_reader();
  wake_writer();
}

void ClientStream::response_data(std::string_view data) {
  if (bodyless_) {
    nghttp2_session_consume(connection_->session_, id_, data.size());  // dropped: credited now
    return;
  }
  std::string frame;
  if (chunked_) {
    append_hex(frame, data.size());
    frame.append("\r\n");
  }
  const std::size_t size = frame.size() + data.size() + (chunked_ ? 2 : 0);
  auto out = in_.prepare(size);
  auto* p = static_cast<char*>(out.data());
  std::memcpy(p, frame.data(), frame.size());
  std::memcpy(p + frame.size(), data.data(), data.size());
  if (chunked_) {
    std::memcpy(p + frame.size() + data.size(), "\r\n", 2);
  }
  in_.commit(size);
  unconsumed_ += data.size();
  wake_reader();
}

void ClientStream::response_end() {
  if (response_ended_) {
    return;
  }
  if (chunked_) {
    constexpr std::string_view kLast = "0\r\n\r\n";
    net::buffer_copy(in_.prepare(kLast.size()), net::buffer(kLast));
    in_.commit(kLast.size());
  }
  response_ended_ = true;
  wake_reader();
}

void ClientStream::on_close(std::uint32_t /*error_code*/) {
  closed_ = true;
  if (!response_ended_) {
    reset_ = true;  // a reset, or a GOAWAY that did not take the stream: retryable
  }
  connection_->forget(*this);
  wake_reader();
  wake_writer();
}

void ClientStream::fail() {
  closed_ = true;
  if (!response_ended_) {
    reset_ = true;
  }
  connection_->forget(*this);
  wake_reader();
  wake_writer();
}

}  // namespace sluice::http2
