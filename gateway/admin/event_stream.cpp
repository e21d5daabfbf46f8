// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/event_stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_path.hpp"
#include "gateway/admin/admin_replies.hpp"

namespace sluice::admin {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;

constexpr auto kEventsAsTuple = net::as_tuple(net::use_awaitable);

/// A whole decimal number, or nullopt.
std::optional<std::uint64_t> event_id_of(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

namespace detail {

/// Unhooks a stream's callbacks from the subscription and the writer when stream_events
/// leaves, however it leaves: they reference its frame. (Not in the unnamed namespace: the
/// coroutine frame holds it, see admin_server.cpp.)
struct EventStreamHooks {
  EventStreamHooks(insight::Subscription& s, BodyWriter& w) : subscription(s), writer(w) {}
  EventStreamHooks(const EventStreamHooks&) = delete;
  EventStreamHooks& operator=(const EventStreamHooks&) = delete;
  ~EventStreamHooks() {
    subscription.on_wake(nullptr);
    writer.on_close(nullptr);
  }
  insight::Subscription& subscription;
  BodyWriter& writer;
};

}  // namespace detail

ReplayFrom replay_from(const Request& req) {
  const auto header = req.find("Last-Event-ID");
  std::optional<std::string> text;
  if (header != req.end()) {
    text = std::string(header->value());
  } else {
    text = query_parameter(req.target(), "since");
  }
  if (!text) {
    return {};
  }
  const auto id = event_id_of(*text);
  return id ? ReplayFrom{id, false} : ReplayFrom{std::nullopt, true};
}

Reply event_stream_reply(const Request& req, insight::EventFeed* feed,
                         const std::shared_ptr<spdlog::logger>& log, const std::string& peer,
                         std::chrono::milliseconds heartbeat) {
  const ReplayFrom from = replay_from(req);
  if (from.malformed) {
    return field_error(req, "must be a whole number (an event id)", "(query) since");
  }
  if (feed == nullptr || feed->is_closed()) {
    return reply(req, http::status::service_unavailable, {{"error", "draining"}});
  }
  auto subscription = feed->subscribe(from.since);
  if (!subscription) {
    log->warn("admin event stream refused peer={} clients={}", peer, feed->subscribers());
    auto res = reply(req, http::status::service_unavailable, {{"error", "too_many_event_clients"}});
    res.set(http::field::retry_after, "5");
    return res;
  }
  log->info("admin event stream open peer={} replayed={} clients={}", peer, subscription->queued(),
            feed->subscribers());
  Response head(http::status::ok, req.version());
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  head.set("X-Accel-Buffering", "no");  // nginx in front: pass each event on at once
  return Reply(std::move(head),
               [subscription = std::move(subscription), log, peer, heartbeat](BodyWriter& out) {
                 return stream_events(out, subscription, heartbeat, log, peer);
               });
}

net::awaitable<void> stream_events(BodyWriter& out,
                                   std::shared_ptr<insight::Subscription> subscription,
                                   std::chrono::milliseconds heartbeat,
                                   std::shared_ptr<spdlog::logger> log, std::string peer) {
  // `wake` is the stream's one wait: it fires when a heartbeat is due and is cancelled by news,
  // a drop, the feed closing or the peer leaving. Everything runs on the admin thread, and the
  // queue is checked before every wait, so no wake-up is lost.
  net::steady_timer wake(co_await net::this_coro::executor);
  insight::Subscription& sub = *subscription;
  sub.on_wake([&wake, &out, &sub] {
    if (sub.is_dropped()) {
      out.close();  // never wait for a client that fell behind, not even for its current write
    }
    wake.cancel();
  });
  out.on_close([&wake] { wake.cancel(); });
  const detail::EventStreamHooks hooks(sub, out);
  wake.expires_after(heartbeat);
  bool heartbeat_due = false;
  std::vector<net::const_buffer> buffers;
  while (!out.is_closed() && !sub.is_dropped()) {
    const std::vector<insight::FeedRecord> records = sub.take();
    if (!records.empty()) {
      buffers.clear();
      for (const auto& record : records) {
        buffers.push_back(net::buffer(*record.text));
      }
      if (!co_await out.write(buffers)) {
        break;
      }
      wake.expires_after(heartbeat);
      heartbeat_due = false;
      continue;
    }
    if (sub.is_closed()) {
      break;  // the feed closed and what was queued is out
    }
    if (heartbeat_due) {
      if (!co_await out.write(": heartbeat\n\n")) {
        break;
      }
      wake.expires_after(heartbeat);
      heartbeat_due = false;
      continue;
    }
    const auto [ec] = co_await wake.async_wait(kEventsAsTuple);
    heartbeat_due = !ec;  // expired, not cancelled
  }
  const char* reason = sub.is_dropped()  ? "dropped"
                       : sub.is_closed() ? "feed_closed"
                                         : "client_gone";
  if (sub.is_dropped()) {
    log->warn("admin event client dropped peer={} reason=queue_full", peer);
  } else {
    log->info("admin event stream closed peer={} reason={}", peer, reason);
  }
}

Reply AdminApi::events(const Call& call) {
  if (call.req.method() != http::verb::get) {
    return method_not_allowed(call.req, "GET");
  }
  if (const auto scope = query_parameter(call.req.target(), "scope"); scope && *scope != "local") {
    if (*scope != "fleet") {
      return field_error(call.req, "must be \"local\" or \"fleet\"", "(query) scope");
    }
    if (context_.fleet_events == nullptr) {
      return reply(call.req, http::status::conflict,
                   {{"error", "the fleet is off (fleet.enabled)"}});
    }
    return event_stream_reply(call.req, context_.fleet_events, log_, show(call.peer));
  }
  return event_stream_reply(call.req, context_.events, log_, show(call.peer));
}

Response AdminApi::breaker_history(const Call& call) {
  if (call.req.method() != http::verb::get) {
    return method_not_allowed(call.req, "GET");
  }
  if (!context_.breaker_history) {
    return not_found(call.req, "no breaker history");
  }
  return reply(call.req, http::status::ok, context_.breaker_history());
}

}  // namespace sluice::admin
