// SPDX-License-Identifier: Apache-2.0
// The client side of an HTTP/2 connection to a backend (docs/grpc.md, "HTTP/2 to backends"):
// its nghttp2 session, bytes in and frames out, and libnghttp2's callbacks, where frames meet
// streams. A stream: client_stream.cpp.
#include "gateway/http2/client_connection.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace sluice::http2 {
namespace {

constexpr std::uint32_t kHeaderTable = 4096;  // HPACK dynamic table, both ways

}  // namespace

struct ClientConnection::Callbacks {
  static ClientConnection& self(void* user_data) {
    return *static_cast<ClientConnection*>(user_data);
  }

  static int on_header(nghttp2_session* /*session*/, const nghttp2_frame* frame,
                       const std::uint8_t* name, std::size_t namelen, const std::uint8_t* value,
                       std::size_t valuelen, std::uint8_t /*flags*/, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) {
      return 0;
    }
    if (ClientStream* stream = self(user_data).find(frame->hd.stream_id)) {
      stream->response_field({reinterpret_cast<const char*>(name), namelen},
                             {reinterpret_cast<const char*>(value), valuelen});
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session* /*session*/, const nghttp2_frame* frame,
                           void* user_data) {
    ClientConnection& c = self(user_data);
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        if (ClientStream* stream = c.find(frame->hd.stream_id)) {
          stream->response_headers_done(
              end_stream, frame->headers.cat == NGHTTP2_HCAT_HEADERS && stream->head_seen_);
        }
        break;
      case NGHTTP2_DATA:
        if (ClientStream* stream = c.find(frame->hd.stream_id); stream != nullptr && end_stream) {
          stream->response_end();
        }
        break;
      case NGHTTP2_GOAWAY:
        c.going_away_ = true;
        if (frame->goaway.error_code != NGHTTP2_NO_ERROR && c.reason_.empty()) {
          c.reason_ = std::string("GOAWAY ") + nghttp2_http2_strerror(frame->goaway.error_code);
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int on_data_chunk_recv(nghttp2_session* /*session*/, std::uint8_t /*flags*/,
                                std::int32_t stream_id, const std::uint8_t* data, std::size_t len,
                                void* user_data) {
    ClientConnection& c = self(user_data);
    if (ClientStream* stream = c.find(stream_id)) {
      stream->response_data({reinterpret_cast<const char*>(data), len});
    } else {
      nghttp2_session_consume_connection(c.session_, len);  // nobody reads it: credit at once
    }
    return 0;
  }

  static int on_stream_close(nghttp2_session* /*session*/, std::int32_t stream_id,
                             std::uint32_t error_code, void* user_data) {
    if (ClientStream* stream = self(user_data).find(stream_id)) {
      stream->on_close(error_code);
    }
    return 0;
  }

  // The request body (a stream found by its id: one that is gone provides nothing more, its
  // reset is on the way).
  static ssize_t read_data(nghttp2_session* /*session*/, std::int32_t stream_id, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* data_flags,
                           nghttp2_data_source* /*source*/, void* user_data) {
    ClientStream* stream = self(user_data).find(stream_id);
    if (stream == nullptr) {
      return NGHTTP2_ERR_DEFERRED;
    }
    return stream->provide(buf, length, data_flags);
  }
};

nghttp2_data_source_read_callback ClientConnection::body_source() {
  return &Callbacks::read_data;
}

nghttp2_session_callbacks* ClientConnection::new_callbacks() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &Callbacks::on_data_chunk_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::on_stream_close);
  return callbacks;
}

ClientConnection::ClientConnection(ClientHost& host, Executor executor, bool tls)
    : host_(&host), executor_(std::move(executor)), tls_(tls) {
  nghttp2_session_callbacks* callbacks = new_callbacks();
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);  // credited as the exchange reads
  nghttp2_option_set_max_deflate_dynamic_table_size(option, kHeaderTable);
  nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  const std::array<nghttp2_settings_entry, 3> entries{{
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, kHeaderTable},
  }};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries.data(), entries.size());
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
}

ClientConnection::~ClientConnection() {
  // Streams hold the connection, so none is left; the session goes.
  nghttp2_session_del(session_);
}

ClientStream* ClientConnection::find(std::int32_t id) const {
  const auto it = ids_.find(id);
  return it == ids_.end() ? nullptr : it->second;
}

ClientStreamPtr ClientConnection::open() {
  if (gone_ || going_away_) {
    return nullptr;
  }
  std::unique_ptr<ClientStream> stream;
  if (spare_.empty()) {
    stream = std::make_unique<ClientStream>(executor_);
  } else {
    stream = std::move(spare_.back());
    spare_.pop_back();
  }
  stream->start(shared_from_this());
  streams_.push_back(*stream);
  ++streams_count_;
  return ClientStreamPtr(stream.release());
}

void ClientConnection::recycle(std::unique_ptr<ClientStream> stream) {
  if (spare_.size() < kSpareClientStreams && !gone_) {
    spare_.push_back(std::move(stream));
  }
}

void RecycleStream::operator()(ClientStream* stream) const noexcept {
  std::unique_ptr<ClientStream> owned(stream);
  if (!stream->connection_) {
    return;
  }
  stream->finish();
  const std::shared_ptr<ClientConnection> connection = std::move(stream->connection_);
  connection->recycle(std::move(owned));  // (the object no longer holds its connection)
}

bool ClientConnection::can_open(std::uint32_t max, std::size_t reserved) const {
  if (gone_ || going_away_) {
    return false;
  }
  const std::uint32_t peer =
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return streams_count_ + reserved < std::min(max, peer);
}

void ClientConnection::forget(ClientStream& stream) {
  if (stream.is_linked()) {
    stream.unlink();
    --streams_count_;
  }
  if (stream.id_ > 0) {
    ids_.erase(stream.id_);
  }
}

void ClientConnection::output() {
  if (host_ != nullptr && !gone_) {
    host_->on_output();
  }
}

bool ClientConnection::receive(std::string_view bytes) {
  if (gone_) {
    return false;
  }
  receiving_ = true;
  const ssize_t rv = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  receiving_ = false;
  for (ClientStream* stream : woken_) {  // (wake_reader() only posts: the list stays as it is)
    stream->wake_due_ = false;
    stream->wake_reader();
  }
  woken_.clear();
  if (rv < 0) {
    reason_ = nghttp2_strerror(static_cast<int>(rv));
    nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
    return false;
  }
  return true;
}

void ClientConnection::send(std::string& out, std::size_t limit) {
  while (!gone_ && out.size() < limit) {
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

bool ClientConnection::wants_io() const {
  return !gone_ &&
         (nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0);
}

void ClientConnection::abort() {
  if (gone_) {
    return;
  }
  gone_ = true;
  host_ = nullptr;
  std::vector<ClientStream*> open;
  for (ClientStream& stream : streams_) {
    open.push_back(&stream);
  }
  for (ClientStream* stream : open) {
    stream->fail();
  }
}

}  // namespace sluice::http2
