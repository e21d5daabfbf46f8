// SPDX-License-Identifier: Apache-2.0
// One HTTP/2 connection (docs/http2.md): its nghttp2 session, bytes in and frames out, the
// stream objects it keeps, the rapid-reset budget, shutdown. Its callbacks:
// connection_callbacks.cpp; a stream: stream.cpp.
#include "gateway/http2/connection.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

namespace sluice::http2 {
namespace {

constexpr std::uint32_t kHeaderTable = 4096;  // HPACK dynamic table, both ways
constexpr double kResetWindowSeconds = 10.0;  // max_stream_resets refill over this long

}  // namespace

Connection::Connection(const Settings& settings, ConnectionHost& host, Executor executor,
                       const core::Clock& clock)
    : settings_(settings),
      host_(host),
      executor_(std::move(executor)),
      clock_(clock),
      reset_tokens_(settings.max_stream_resets),
      reset_refilled_(clock.now()) {
  nghttp2_session_callbacks* callbacks = new_callbacks();
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);  // credited as the data path reads
  nghttp2_option_set_max_deflate_dynamic_table_size(option, kHeaderTable);
  // nghttp2's own reset limiter stays as a backstop behind ours (spend_reset()).
  nghttp2_option_set_stream_reset_rate_limit(option, 2ULL * settings.max_stream_resets + 1000,
                                             settings.max_stream_resets / 5 + 33);
  nghttp2_session_server_new3(&session_, callbacks, this, option, memory_.mem());
  memory_.session_made();
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

void Connection::release_idle_memory() noexcept {
  if (serving_ == 0 && nghttp2_session_want_write(session_) == 0) {
    memory_.release_frame_buffer_pages();
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
