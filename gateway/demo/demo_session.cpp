// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/demo_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <exception>
#include <iostream>
#include <memory>

namespace sluice::demo {
namespace {

constexpr auto kSessionAsTuple = net::as_tuple(net::use_awaitable);

/// Errors that mean "the bytes were not HTTP" (worth a 400) rather than "the peer went away".
bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

/// How the grant of a queued SlotClaim reaches its session: on the session's thread it sets
/// `granted` and wakes the session's wait on `timer`. Shared by the session and the claim's
/// grant callback, which may run (on another thread) after the session gave up waiting.
struct SlotGrant {
  explicit SlotGrant(const net::any_io_executor& executor)
      : timer(executor, net::steady_timer::time_point::max()) {}
  net::steady_timer timer;
  bool granted = false;
};

/// The session lives in this coroutine's frame; `context` outlives it (see SessionContext).
net::awaitable<void> run_session(net::ip::tcp::socket socket, const SessionContext& context) {
  Session session(std::move(socket), context);
  co_await session.run();
}

}  // namespace

Session::Session(net::ip::tcp::socket socket, const SessionContext& context)
    : stream_(std::move(socket)), context_(context) {}

net::awaitable<void> Session::run() {
  for (;;) {
    RequestParser parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(boost::none);  // bodies stream through; their size is not our concern
    stream_.expires_after(kIdleTimeout);
    auto [ec, n] = co_await http::async_read_header(stream_, buffer_, parser, kSessionAsTuple);
    if (ec) {
      if (is_parse_error(ec)) {
        Request none;
        none.version(11);
        none.keep_alive(false);
        Reply reply{400, "application/json", R"({"error":"bad_request"})", true};
        co_await write_reply(none, reply);
      }
      break;
    }
    if (!co_await handle(parser)) {
      break;
    }
  }
  beast::error_code ignored;  // the peer may already be gone
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
}

net::awaitable<bool> Session::handle(RequestParser& parser) {
  const auto& req = parser.get();
  const Route route = match_route(req.target());
  const bool is_head = req.method() == http::verb::head;
  if (!co_await send_continue_if_expected(parser)) {
    co_return false;
  }
  const bool is_fault_route = route.kind == RouteKind::kHealth || route.kind == RouteKind::kControl;
  const bool is_upgrade = (route.kind == RouteKind::kWsEcho || route.kind == RouteKind::kWsPush) &&
                          beast::websocket::is_upgrade(req);
  // The overload model: every other request waits in the queue for one of the capacity's
  // slots, holds it service_ms (plus delay_ms) before its answer and gives it back once
  // answered (`slot` lives until this function returns). /healthz and /control never queue,
  // so health checks and healing work under overload; a WebSocket would hold a slot for life.
  std::optional<SlotClaim> slot;
  auto wait = std::chrono::milliseconds::zero();
  if (!is_fault_route && !is_upgrade) {
    if (!co_await take_slot(slot)) {
      co_return false;
    }
    wait = context_.faults.service_time();
  }
  // The fault settings: delay_ms holds up every answer but /control's (so a slow instance can
  // be healed), fail_percent applies to every route but /healthz and /control, and /healthz
  // answers by the health setting alone.
  if (route.kind != RouteKind::kControl) {
    wait += context_.faults.delay();
  }
  if (wait > std::chrono::milliseconds::zero()) {
    co_await pause(wait);
  }
  if (!is_fault_route) {
    if (const auto failure = context_.faults.next_failure()) {
      co_return co_await fail(parser, *failure);
    }
  }
  if (route.kind == RouteKind::kEcho && !is_head) {
    co_return co_await echo(parser);
  }
  if (is_upgrade) {
    co_await websocket(parser, route);
    co_return false;
  }
  const auto body_bytes = co_await drain_body(parser);
  if (!body_bytes) {
    co_return false;
  }
  if (route.kind == RouteKind::kBytes) {
    co_return co_await send_bytes(req, route.number);
  }
  if (route.kind == RouteKind::kSlow) {
    co_await pause(std::chrono::milliseconds(route.number));
  }
  Reply reply = is_fault_route ? fault_reply(route, req, context_.faults)
                               : simple_reply(route, req, *body_bytes);
  co_return co_await write_reply(req, reply);
}

net::awaitable<void> Session::pause(std::chrono::milliseconds delay) {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(delay);
  co_await timer.async_wait(kSessionAsTuple);  // operation_aborted only when the server stops
}

net::awaitable<bool> Session::take_slot(std::optional<SlotClaim>& slot) {
  using net::experimental::awaitable_operators::operator||;
  auto& capacity = context_.faults.capacity();
  if (auto free = capacity.try_claim()) {  // the common case builds no grant and no timer
    slot.emplace(std::move(*free));
    co_return true;
  }
  auto grant = std::make_shared<SlotGrant>(co_await net::this_coro::executor);
  slot.emplace(capacity.claim([grant] {
    // Any thread: hop to the session's, which owns the timer.
    net::post(grant->timer.get_executor(), [grant] {
      grant->granted = true;
      grant->timer.cancel();
    });
  }));
  if (slot->holds_slot()) {
    co_return true;
  }
  auto& socket = stream_.socket();
  bool watch = true;
  while (!grant->granted) {
    if (!watch) {
      co_await grant->timer.async_wait(kSessionAsTuple);
      continue;
    }
    // Whichever comes first; the other wait is cancelled.
    co_await (grant->timer.async_wait(kSessionAsTuple) ||
              socket.async_wait(net::socket_base::wait_read, kSessionAsTuple));
    if (grant->granted) {
      break;
    }
    // Readable while queued: pipelined bytes, or the client's FIN or RST.
    beast::error_code ec;
    if (socket.available(ec) == 0 || ec) {
      slot.reset();  // withdrawn (or, had the grant just raced it, the slot given back)
      co_return false;
    }
    watch = false;
  }
  slot->granted();
  co_return true;
}

net::awaitable<bool> Session::fail(RequestParser& parser, FailStatus status) {
  // Read the whole request first: a reset must come after the request, not race its upload.
  if (!co_await drain_body(parser)) {
    co_return false;
  }
  if (status == FailStatus::kReset) {
    reset();
    co_return false;
  }
  Reply reply{503, "application/json", R"({"error":"injected_failure"})", false};
  co_return co_await write_reply(parser.get(), reply);
}

void Session::reset() {
  beast::error_code ignored;
  auto& socket = stream_.socket();
  socket.set_option(net::socket_base::linger(true, 0), ignored);
  socket.close(ignored);  // run()'s shutdown afterwards fails quietly on the closed socket
}

net::awaitable<bool> Session::send_continue_if_expected(const RequestParser& parser) {
  const auto& req = parser.get();
  if (parser.is_done() || req.version() < 11 ||
      !beast::iequals(req[http::field::expect], "100-continue")) {
    co_return true;
  }
  http::response<http::empty_body> interim{http::status::continue_, 11};
  stream_.expires_after(kIdleTimeout);
  auto [ec, n] = co_await http::async_write(stream_, interim, kSessionAsTuple);
  co_return !ec;
}

net::awaitable<bool> Session::write_reply(const Request& req, Reply& reply) {
  http::response<http::string_body> res;
  res.version(req.version());
  res.result(reply.status);
  if (res.reason() == "<unknown-status>") {
    res.reason("Unknown");  // Beast names only the registered statuses
  }
  res.set(http::field::content_type, reply.content_type);
  res.set("X-Backend-Port", context_.port_text);
  if (reply.offers_websocket) {
    res.set(http::field::upgrade, "websocket");  // a 426 names the protocol to upgrade to
  }
  if (!reply.allow.empty()) {
    res.set(http::field::allow, reply.allow);
  }
  // A 1xx is interim: nothing final follows it here, so the connection ends after it.
  const bool keep_alive = req.keep_alive() && !reply.close && reply.status >= 200;
  if (!is_bodyless(reply.status)) {
    res.content_length(reply.body.size());
    if (req.method() != http::verb::head) {
      res.body() = std::move(reply.body);
    }
  }
  res.keep_alive(keep_alive);
  stream_.expires_after(kIdleTimeout);
  auto [ec, n] = co_await http::async_write(stream_, res, kSessionAsTuple);
  co_return !ec && keep_alive;
}

char* Session::scratch() {
  if (!scratch_) {
    scratch_ = std::make_unique<std::array<char, kPieceBytes>>();
  }
  return scratch_->data();
}

void spawn_session(net::ip::tcp::socket socket, const SessionContext& context) {
  const auto executor = socket.get_executor();
  net::co_spawn(executor, run_session(std::move(socket), context),
                [](const std::exception_ptr& error) {
                  if (!error) {
                    return;
                  }
                  try {
                    std::rethrow_exception(error);
                  } catch (const std::exception& e) {
                    std::cerr << "sluice-demo-backend: session failed: " << e.what() << '\n';
                  }
                });
}

}  // namespace sluice::demo
