// SPDX-License-Identifier: Apache-2.0
#pragma once

// `GET /admin/events` (docs/operating.md "Live events", docs/admin-api.md "Live events"): the
// live event feed as Server-Sent Events over a streaming admin reply.

#include <spdlog/logger.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gateway/admin/admin_server.hpp"
#include "gateway/insight/event_feed.hpp"

namespace sluice::admin {

/// How long an event stream stays silent before it sends the comment line `: heartbeat`.
inline constexpr std::chrono::milliseconds kEventHeartbeat{15000};

/// Where a client's replay starts: after the id in its Last-Event-ID header, else after the
/// query's `since`; nothing replayed when neither is there.
struct ReplayFrom {
  std::optional<std::uint64_t> since;
  bool malformed = false;  ///< a value that is not a whole number (answer 400)
};
[[nodiscard]] ReplayFrom replay_from(const Request& req);

/// The reply to an authorised `GET /admin/events` from `peer`: 503 when `feed` is null or
/// closed (the gateway drains) or has its 64 clients; else a `text/event-stream` head
/// (`Cache-Control: no-cache`, `X-Accel-Buffering: no`) whose producer runs stream_events.
/// The feed and the logger outlive the reply's stream (the subscription does not reference the
/// feed).
[[nodiscard]] Reply event_stream_reply(const Request& req, insight::EventFeed* feed,
                                       const std::shared_ptr<spdlog::logger>& log,
                                       const std::string& peer,
                                       std::chrono::milliseconds heartbeat = kEventHeartbeat);

/// Sends `subscription`'s records to `out` as they come (several in one write when they
/// queued up), and `: heartbeat` after `heartbeat` of silence, until the client leaves, the
/// feed closes (what was queued is sent first) or the subscription is dropped for falling
/// behind: then the connection is closed at once, even in the middle of a write.
boost::asio::awaitable<void> stream_events(BodyWriter& out,
                                           std::shared_ptr<insight::Subscription> subscription,
                                           std::chrono::milliseconds heartbeat,
                                           std::shared_ptr<spdlog::logger> log, std::string peer);

}  // namespace sluice::admin
