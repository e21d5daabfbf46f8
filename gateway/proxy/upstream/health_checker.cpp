// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/upstream/health_checker.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <random>

#include "gateway/proxy/io/stream_ops.hpp"

namespace sluice::proxy {
namespace {

namespace http = boost::beast::http;

/// The largest response head a check reads (a larger one fails the check).
constexpr std::size_t kMaxCheckHead = 16 * 1024;
constexpr std::size_t kMaxCheckBody = 64 * 1024;  // a gRPC health answer is a few bytes

/// What a check's deadline cancels: the connection's stream.
struct CheckTarget {
  UpstreamStream* stream = nullptr;
  static void expire(void* self) noexcept {
    auto* t = static_cast<CheckTarget*>(self);
    if (t->stream != nullptr) {
      StreamOps<UpstreamStream>::cancel(*t->stream);
    }
  }
};

std::string check_request(const UpstreamEndpoint& endpoint, const config::HealthCheckConfig& c) {
  std::string host = endpoint.label;
  if (endpoint.tls && endpoint.tls->config().server_name) {
    host = *endpoint.tls->config().server_name;
  }
  if (c.type == config::HealthCheckConfig::Type::kGrpc) {
    // grpc.health.v1.HealthCheckRequest{service}: field 1, length-delimited (empty: no field),
    // in one uncompressed gRPC message (a zero flag byte and a 4-byte big-endian length).
    std::string message;
    if (!c.service.empty()) {
      message.push_back('\x0a');
      message.push_back(static_cast<char>(c.service.size()));  // (a service name under 128 bytes)
      message.append(c.service);
    }
    std::string frame(5, '\0');
    frame[4] = static_cast<char>(message.size());
    frame.append(message);
    return "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: " + host +
           "\r\nUser-Agent: sluice-health-check\r\nContent-Type: application/grpc\r\nTE: "
           "trailers\r\nContent-Length: " +
           std::to_string(frame.size()) + "\r\n\r\n" + frame;
  }
  return "GET " + c.path + " HTTP/1.1\r\nHost: " + host +
         "\r\nUser-Agent: sluice-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n";
}

/// Whether a gRPC health answer says SERVING: grpc-status 0 (in the trailers, or the head of a
/// trailers-only answer) and one HealthCheckResponse message whose `status` (field 1) is 1.
bool grpc_serving(const http::response<http::string_body>& response, std::string& why) {
  const auto status = response["grpc-status"];
  if (status != "0") {
    why = "grpc-status " + (status.empty() ? std::string("missing") : std::string(status));
    return false;
  }
  const std::string& body = response.body();
  if (body.size() < 5 || body[0] != '\0') {
    why = "no health message";
    return false;
  }
  const std::string_view message = std::string_view(body).substr(5);
  for (std::size_t i = 0; i + 1 < message.size(); i += 2) {  // varint fields: key, one byte
    if (message[i] == '\x08') {
      if (message[i + 1] == '\x01') {
        return true;
      }
      why = "health status " + std::to_string(static_cast<int>(message[i + 1]));
      return false;
    }
  }
  why = "health status UNKNOWN";
  return false;
}

}  // namespace

HealthChecker::HealthChecker(const Executor& executor, const core::Clock& clock,
                             const SnapshotSource& snapshots, health::HealthRegistry& registry,
                             std::shared_ptr<spdlog::logger> log)
    : executor_(executor),
      clock_(clock),
      snapshots_(snapshots),
      registry_(registry),
      log_(std::move(log)),
      sweep_(executor, clock),
      tcp_connector_(executor, sweep_, &ops_, log_),
      connector_(executor, tcp_connector_, clock, &ops_, log_),
      timer_(executor),
      random_{0, std::random_device{}()} {}

HealthChecker::~HealthChecker() {
  *alive_ = false;
}

void HealthChecker::start(core::Duration tick) {
  if (running_) {
    return;
  }
  running_ = true;
  sweep_.start(std::clamp<core::Duration>(tick / 2, std::chrono::milliseconds(5),
                                          std::chrono::milliseconds(50)));
  schedule(tick);
}

void HealthChecker::stop() {
  running_ = false;
  timer_.cancel();
  sweep_.stop();
}

void HealthChecker::schedule(core::Duration tick) {
  timer_.expires_after(tick);
  timer_.async_wait([this, tick, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || !running_) {
      return;
    }
    run_due(clock_.now());
    schedule(tick);
  });
}

core::Duration HealthChecker::jittered(core::Duration interval) noexcept {
  // ±10%: endpoints checked by many gateways (or restarted together) drift apart.
  const std::uint64_t z = random_.random();
  const double unit = static_cast<double>(z >> 11U) * 0x1.0p-53;  // [0, 1)
  const double factor = 0.9 + 0.2 * unit;
  return std::chrono::duration_cast<core::Duration>(interval * factor);
}

void HealthChecker::run_due(core::TimePoint now) {
  const std::shared_ptr<const Snapshot> snapshot = snapshots_.load();
  std::map<std::pair<std::string, std::string>, Due> next;  // what the current config checks
  for (std::size_t b = 0; b < snapshot->backend_count(); ++b) {
    const Backend& backend = snapshot->backend(b);
    const auto& settings = backend.config().health_check;
    if (!settings) {
      continue;
    }
    auto health = registry_.find(backend.name());
    if (!health || health.get() != &backend.health()) {
      continue;  // a newer version is being installed: the next tick checks it
    }
    for (std::size_t e = 0; e < backend.endpoints().size(); ++e) {
      auto key = std::make_pair(backend.name(), backend.endpoints()[e].label);
      Due due;
      if (const auto it = due_.find(key); it != due_.end()) {
        due = it->second;
      } else {
        due.next = now + jittered(settings->interval) / 10;  // a new endpoint: checked soon
      }
      if (!due.running && now >= due.next) {
        due.running = true;
        due.next = now + jittered(settings->interval);
        net::co_spawn(executor_, check(snapshot, b, e, health), net::detached);
      }
      next.emplace(std::move(key), due);
    }
  }
  due_ = std::move(next);
  // HTTP/2 connections to endpoints no longer checked close; a checked one stays open between
  // checks up to a minute apart.
  connector_.sweep(
      [&](std::string_view label) {
        return std::any_of(due_.begin(), due_.end(),
                           [&](const auto& entry) { return entry.first.second == label; });
      },
      std::chrono::minutes(1));
}

Task<void> HealthChecker::check(std::shared_ptr<const Snapshot> snapshot, std::size_t backend,
                                std::size_t endpoint,
                                std::shared_ptr<health::EndpointHealth> health) {
  const auto alive = alive_;
  const Backend& b = snapshot->backend(backend);
  const UpstreamEndpoint& e = b.endpoints()[endpoint];
  std::string why;
  const bool passed = co_await probe(e, *b.config().health_check, why);
  if (!*alive) {
    co_return;
  }
  ++checks_;
  if (const auto it = due_.find({b.name(), e.label}); it != due_.end()) {
    it->second.running = false;
  }
  switch (health->check_result(endpoint, passed)) {
    case health::CheckChange::kBecameUnhealthy:
      log_->warn("endpoint unhealthy backend={} endpoint={} failed_checks={} last=\"{}\"", b.name(),
                 e.label, b.config().health_check->unhealthy_threshold, why);
      break;
    case health::CheckChange::kBecameHealthy:
      log_->info("endpoint healthy again backend={} endpoint={} passed_checks={}", b.name(),
                 e.label, b.config().health_check->healthy_threshold);
      break;
    case health::CheckChange::kNone:
      break;
  }
}

Task<bool> HealthChecker::probe(const UpstreamEndpoint& endpoint,
                                const config::HealthCheckConfig& check, std::string& why) {
  const core::TimePoint deadline_at = clock_.now() + check.timeout;
  auto connected = co_await connector_.connect(endpoint, check.timeout);
  if (connected.error) {
    why = "connect: " + connected.error.message();
    co_return false;
  }
  auto conn = std::move(connected.connection);
  CheckTarget target{&conn->stream};
  Deadline deadline(sweep_, &CheckTarget::expire, &target);
  deadline.arm(deadline_at);
  const std::string request = check_request(endpoint, check);
  auto ec =
      co_await write_all(conn->stream, net::const_buffer(request.data(), request.size()), &ops_);
  const bool grpc = check.type == config::HealthCheckConfig::Type::kGrpc;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxCheckHead);
  parser.body_limit(kMaxCheckBody);
  // An HTTP check judges the status alone; a gRPC one reads the whole answer, trailers included.
  const auto done = [&] { return grpc ? parser.is_done() : parser.is_header_done(); };
  parser.eager(true);
  while (!ec && !done()) {
    while (conn->buffer.size() > 0 && !done()) {
      boost::beast::error_code pec;
      const std::size_t used = parser.put(conn->buffer.data(), pec);
      conn->buffer.consume(used);
      if (pec == http::error::need_more || (!pec && used == 0)) {
        break;  // the rest is still arriving
      }
      if (pec) {
        ec = pec;
        break;
      }
    }
    if (ec || done()) {
      break;
    }
    auto [rec, n] = co_await conn->async_receive(pooled(&ops_));
    ec = rec;
  }
  deadline.disarm();
  StreamOps<UpstreamStream>::close(conn->stream);
  if (ec) {
    why = deadline.expired() ? "timed out" : ec.message();
    co_return false;
  }
  const int status = static_cast<int>(parser.get().result_int());
  if (grpc) {
    if (status != 200) {
      why = "status " + std::to_string(status);
      co_return false;
    }
    co_return grpc_serving(parser.get(), why);
  }
  if (std::find(check.expected_statuses.begin(), check.expected_statuses.end(), status) ==
      check.expected_statuses.end()) {
    why = "status " + std::to_string(status);
    co_return false;
  }
  co_return true;
}

}  // namespace sluice::proxy
