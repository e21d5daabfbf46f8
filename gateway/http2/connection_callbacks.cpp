// SPDX-License-Identifier: Apache-2.0
// libnghttp2's callbacks for one connection (docs/http2.md): where frames meet streams. A
// request's fields go to its Stream, a malformed one is reset, DATA goes to the request body,
// resets spend the rapid-reset budget, a closed stream lets go of its object.
#include <boost/asio/error.hpp>

#include "gateway/http2/connection.hpp"

namespace sluice::http2 {

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
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      Connection& c = self(user_data);
      // Ours first; a graceful one is a drain or an idle timeout; else what the library wrote
      // in the GOAWAY's debug data, or last reported.
      std::string_view reason = "a frame the protocol refuses (libnghttp2 gave no detail)";
      if (!c.reason_.empty()) {
        reason = c.reason_;
      } else if (frame->goaway.error_code == NGHTTP2_NO_ERROR) {
        reason = "shut down (drain or idle)";
      } else if (frame->goaway.opaque_data_len > 0) {
        reason = {reinterpret_cast<const char*>(frame->goaway.opaque_data),
                  frame->goaway.opaque_data_len};
      } else if (!c.library_error_.empty()) {
        reason = c.library_error_;
      }
      c.host_.on_goaway_sent(frame->goaway.error_code, reason);
      return 0;
    }
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

  /// libnghttp2 explains an error it handles itself (a broken frame answered with GOAWAY or
  /// RST_STREAM): kept for the GOAWAY's log line.
  static int on_error(nghttp2_session* /*session*/, int /*code*/, const char* message,
                      std::size_t length, void* user_data) {
    self(user_data).library_error_.assign(message, length);
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

nghttp2_session_callbacks* Connection::new_callbacks() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &Callbacks::on_data_chunk_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::on_stream_close);
  nghttp2_session_callbacks_set_error_callback2(callbacks, &Callbacks::on_error);
  return callbacks;
}

}  // namespace sluice::http2
