// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/upstream/health_checker.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <random>

#include "gateway/proxy/io/stream_ops.hpp"

namespace sluice::proxy {
namespace {

namespace http = boost::beast::http;

/// The largest response head a check reads (a larger one fails the check).
constexpr std::size_t kMaxCheckHead = 16 * 1024;

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
  return "GET " + c.path + " HTTP/1.1\r\nHost: " + host +
         "\r\nUser-Agent: sluice-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n";
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
      connector_(executor, sweep_, &ops_, log_),
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
  http::response_parser<http::empty_body> parser;
  parser.header_limit(kMaxCheckHead);
  parser.skip(false);
  while (!ec && !parser.is_header_done()) {
    if (conn->buffer.size() > 0) {
      boost::beast::error_code pec;
      const std::size_t used = parser.put(conn->buffer.data(), pec);
      conn->buffer.consume(used);
      if (pec && pec != http::error::need_more) {
        ec = pec;
        break;
      }
      if (parser.is_header_done()) {
        break;
      }
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
  if (std::find(check.expected_statuses.begin(), check.expected_statuses.end(), status) ==
      check.expected_statuses.end()) {
    why = "status " + std::to_string(status);
    co_return false;
  }
  co_return true;
}

}  // namespace sluice::proxy
