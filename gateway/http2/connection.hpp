// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nghttp2/nghttp2.h>

#include <boost/intrusive/list.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/http2/session_memory.hpp"
#include "gateway/http2/stream.hpp"

// One HTTP/2 connection's protocol state (docs/http2.md); its streams: stream.hpp.
namespace sluice::http2 {

/// The nghttp2 server session of one connection and its streams. No socket I/O of its own: the
/// session (gateway/proxy/session/h2_session.hpp) feeds it the bytes it reads and writes the
/// frames it takes. Confined to one worker's thread; the host and the clock outlive it.
class Connection {
 public:
  Connection(const Settings& settings, ConnectionHost& host, Executor executor,
             const core::Clock& clock);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Feeds bytes read from the client. Returns false when the connection is over (a protocol
  /// error or an abuse: its GOAWAY is queued; reason() says which).
  bool receive(std::string_view bytes);
  /// Appends frames waiting to be sent to `out`, up to about `limit` bytes.
  void send(std::string& out, std::size_t limit);
  /// Whether the protocol still expects to read or write (false once a GOAWAY has been
  /// exchanged and no stream is left).
  [[nodiscard]] bool wants_io() const;
  /// Graceful end (drain, idle timeout): GOAWAY naming the last stream taken; those finish.
  void shut_down();
  /// For a connection that has been idle a while (no stream served, nothing to send): gives the
  /// pages of nghttp2's frame buffer back to the kernel (docs/http2.md, "Memory per
  /// connection"). Does nothing while a frame waits to be sent.
  void release_idle_memory() noexcept;
  /// What the session allocates from (its frame buffer's residency, for tests and insight).
  [[nodiscard]] const SessionMemory& memory() const noexcept { return memory_; }
  /// The connection is gone: every stream's pending operation fails, no more requests start,
  /// and receive() and send() do nothing from now on.
  void abort_streams();
  /// Requests handed to the session and not served yet.
  [[nodiscard]] std::size_t serving() const noexcept { return serving_; }
  [[nodiscard]] bool ever_served() const noexcept { return requests_ > 0; }
  /// Why receive() returned false (empty otherwise).
  [[nodiscard]] std::string_view reason() const noexcept { return reason_; }
  [[nodiscard]] Executor executor() const noexcept { return executor_; }

 private:
  friend class Stream;
  struct Callbacks;  ///< nghttp2's callbacks (connection_callbacks.cpp)
  /// A callbacks object for nghttp2_session_server_new3 (the caller deletes it).
  static nghttp2_session_callbacks* new_callbacks();

  Stream* find(std::int32_t id) const;
  /// A stream object for `id`: a recycled one when there is one.
  Stream& open(std::int32_t id);
  /// The stream is over: its object is kept for the next (up to kSpareStreams) or freed.
  void erase(Stream& stream);
  bool spend_reset();

  Settings settings_;
  ConnectionHost& host_;
  Executor executor_;
  const core::Clock& clock_;
  SessionMemory memory_;  ///< what the session allocates from (declared before it: outlives it)
  nghttp2_session* session_ = nullptr;
  boost::intrusive::list<Stream, boost::intrusive::constant_time_size<false>> streams_;
  std::vector<std::unique_ptr<Stream>> spare_;  ///< recycled stream objects
  std::size_t serving_ = 0;
  std::uint64_t requests_ = 0;
  bool aborted_ = false;
  bool shut_down_ = false;
  double reset_tokens_;
  core::TimePoint reset_refilled_;
  std::string reason_;
  std::string library_error_;  ///< what libnghttp2 last reported (error callback), for GOAWAYs
};

}  // namespace sluice::http2
