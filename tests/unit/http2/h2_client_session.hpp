// SPDX-License-Identifier: Apache-2.0
#pragma once

// libnghttp2's own client session, its frames handed over in memory: the peer of the
// http2::Connection tests (connection_test_support.hpp), recording what it saw of each stream.

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gateway/http2/response_translator.hpp"

namespace sluice::http2 {
namespace client_session_support {

/// What the client saw of one stream.
struct Seen {
  FieldVector headers;
  FieldVector trailers;
  std::string body;
  std::vector<std::string> never_indexed;  ///< fields HPACK sent as never-indexed literals
  bool closed = false;
  std::uint32_t error = 0;
};

/// libnghttp2's client session, its frames handed over in memory.
class Client {
 public:
  explicit Client(std::uint32_t window = 65535) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
               std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
               std::uint8_t flags, void* user) {
          Seen& seen = static_cast<Client*>(user)->streams[frame->hd.stream_id];
          if ((flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0) {
            seen.never_indexed.emplace_back(reinterpret_cast<const char*>(name), namelen);
          }
          FieldVector& into = frame->headers.cat == NGHTTP2_HCAT_HEADERS && !seen.headers.empty()
                                  ? seen.trailers
                                  : seen.headers;
          into.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                            std::string(reinterpret_cast<const char*>(value), valuelen));
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cb, [](nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
               std::size_t len, void* user) {
          static_cast<Client*>(user)->streams[id].body.append(reinterpret_cast<const char*>(data),
                                                              len);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cb, [](nghttp2_session*, std::int32_t id, std::uint32_t error, void* user) {
          Seen& seen = static_cast<Client*>(user)->streams[id];
          seen.closed = true;
          seen.error = error;
          return 0;
        });
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* frame, void* user) {
          if (frame->hd.type == NGHTTP2_GOAWAY) {
            static_cast<Client*>(user)->goaway = frame->goaway.error_code;
            static_cast<Client*>(user)->goaway_last = frame->goaway.last_stream_id;
          }
          return 0;
        });
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_no_auto_window_update(option, 1);
    nghttp2_session_client_new2(&session, cb, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(cb);
    const nghttp2_settings_entry entry{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window};
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, &entry, 1);
  }
  ~Client() { nghttp2_session_del(session); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Submits a request; `body` set: sent with a content-length from a data provider.
  std::int32_t request(const std::string& method, const std::string& path,
                       const FieldVector& extra = {}, const std::string* body = nullptr) {
    FieldVector fields{{":method", method},
                       {":scheme", "https"},
                       {":authority", "api.example.test"},
                       {":path", path}};
    fields.insert(fields.end(), extra.begin(), extra.end());
    return submit(fields, body);
  }

  /// Submits a request of exactly these fields, pseudo-fields included.
  std::int32_t submit(FieldVector fields, const std::string* body = nullptr) {
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : fields) {
      nv.push_back({reinterpret_cast<std::uint8_t*>(n.data()),
                    reinterpret_cast<std::uint8_t*>(v.data()), n.size(), v.size(),
                    NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider provider{};
    if (body != nullptr) {
      upload = *body;
      uploaded = 0;
      provider.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf,
                                  std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                  void* user) -> ssize_t {
        Client& c = *static_cast<Client*>(user);
        const std::size_t n = std::min(length, c.upload.size() - c.uploaded);
        std::memcpy(buf, c.upload.data() + c.uploaded, n);
        c.uploaded += n;
        if (c.uploaded == c.upload.size()) {
          *flags |= NGHTTP2_DATA_FLAG_EOF;
        }
        return static_cast<ssize_t>(n);
      };
    }
    return nghttp2_submit_request(session, nullptr, nv.data(), nv.size(),
                                  body != nullptr ? &provider : nullptr, nullptr);
  }

  nghttp2_session* session = nullptr;
  std::map<std::int32_t, Seen> streams;
  std::optional<std::uint32_t> goaway;
  std::int32_t goaway_last = -1;
  std::string upload;
  std::size_t uploaded = 0;
};

}  // namespace client_session_support
}  // namespace sluice::http2
