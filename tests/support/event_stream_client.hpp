// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// One Server-Sent Event as a client reads it.
struct SseEvent {
  std::optional<std::uint64_t> id;
  std::string type;  ///< `event:` ("message" when absent)
  std::string data;  ///< the `data:` lines joined by "\n"
  /// `data` parsed as JSON (throws when it is not).
  [[nodiscard]] nlohmann::json json() const { return nlohmann::json::parse(data); }
};

/// What an EventStreamClient asks for.
struct EventStreamOptions {
  std::optional<std::string> token;          ///< sent as `Authorization: Bearer TOKEN`
  std::optional<std::string> last_event_id;  ///< sent as `Last-Event-ID`
  std::string target = "/admin/events";
  int receive_buffer = 0;  ///< SO_RCVBUF in bytes, set before connecting; 0: the default
};

/// A Server-Sent Events client of the gateway's `GET /admin/events` (or any SSE target) on
/// 127.0.0.1:PORT over its own blocking socket: the constructor connects and sends the request,
/// and nothing is read until the test asks, so a client that never calls next() is a client
/// that never reads (with a small `receive_buffer`, the server soon cannot write to it).
/// Decodes chunked transfer encoding. Every read is bounded by its timeout.
///
/// Thread-safety: confined to one thread. Lifetime: owns its socket.
class EventStreamClient {
 public:
  using Options = EventStreamOptions;

  /// Connects and sends the request; throws std::runtime_error when either fails.
  explicit EventStreamClient(std::uint16_t port, Options options = {});
  ~EventStreamClient();
  EventStreamClient(const EventStreamClient&) = delete;
  EventStreamClient& operator=(const EventStreamClient&) = delete;

  /// Reads the response head if not yet read: its status (0 when none came within `timeout`).
  unsigned status(std::chrono::milliseconds timeout = kDefaultTimeout);
  /// A response header field (lowercase name) of the head status() read; "" when absent.
  [[nodiscard]] std::string header(const std::string& lowercase_name) const;
  /// The body so far, for a reply that is not a stream (an error's JSON).
  [[nodiscard]] const std::string& body() const noexcept { return body_; }

  /// The next event (comment lines are counted, not returned), nullopt when none is complete
  /// within `timeout` or the stream ended first.
  std::optional<SseEvent> next(std::chrono::milliseconds timeout = kDefaultTimeout);
  /// The comment lines read so far (`: heartbeat`), without the leading ':' and space.
  [[nodiscard]] std::size_t comments() const noexcept { return comments_; }
  /// Reads (keeping what arrives for next()) until the server closes the connection: true if it
  /// does within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = kDefaultTimeout);
  /// The chunked body ended with its last chunk (a clean end, not a cut connection).
  [[nodiscard]] bool ended_cleanly() const noexcept { return last_chunk_; }

 private:
  /// One recv into raw_, waiting at most until `deadline`; false on timeout or end.
  bool read_more(std::chrono::steady_clock::time_point deadline);
  /// Moves what raw_ holds of the body into body_ (decoding chunks once the head is read).
  void decode();
  /// Parses the head from raw_ if complete.
  bool parse_head();

  int fd_ = -1;
  std::string raw_;   ///< bytes received, not yet decoded
  std::string body_;  ///< decoded body bytes, not yet parsed into events
  unsigned status_ = 0;
  std::map<std::string, std::string> headers_;
  bool chunked_ = false;
  bool last_chunk_ = false;
  bool eof_ = false;
  std::size_t comments_ = 0;
};

}  // namespace sluice::testing
