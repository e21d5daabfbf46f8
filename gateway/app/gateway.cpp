// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/gateway.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <csignal>
#include <set>

#include "gateway/app/listen_socket.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/core/utc_time.hpp"
#include "gateway/log/logging.hpp"
#include "gateway/log/user_hash.hpp"
#include "gateway/proxy/steps/identify_step.hpp"

namespace sluice::app {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

constexpr auto kDrainPoll = 50ms;
constexpr auto kTickInterval = 1s;  // the store's housekeeping, retired metric series
constexpr auto kCutGrace = 200ms;   // after cutting, how long sessions get to unwind

std::size_t thread_count(const config::Config& config) {
  return config.threads != 0 ? config.threads : std::max(1U, std::thread::hardware_concurrency());
}

// The admin bearer token: the value of the env var admin.token_env names, if set and not empty.
std::optional<std::string> read_admin_token(const config::AdminConfig& admin) {
  if (!admin.token_env) {
    return std::nullopt;
  }
  const char* value = std::getenv(admin.token_env->c_str());  // NOLINT(concurrency-mt-unsafe)
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

/// The key of the access log's `user` hash: from the variable `access_log.user_hash_key_env`
/// names (so hashes agree across replicas and restarts), else random per process.
/// Adds `problem` to what stops the start: every reason is reported, none replaces another.
void add_startup_error(std::optional<std::string>& errors, const std::string& problem) {
  errors = errors ? *errors + "; " + problem : problem;
}

core::KeyedHash user_hash(const config::AccessLogConfig& config,
                          std::optional<std::string>& error) {
  std::string problem;
  if (auto hash = log::user_hash_from_env(config, problem)) {
    return *hash;
  }
  if (!problem.empty()) {
    add_startup_error(error, problem);
  }
  return core::KeyedHash::with_random_key();
}

}  // namespace

Gateway::Gateway(std::filesystem::path config_path, config::ConfigDocument document)
    : config_file_(std::move(config_path)),
      document_(std::move(document)),
      config_(document_.shared_config()),
      listeners_(config_->listeners),
      admin_token_(read_admin_token(config_->admin)),
      log_(log::get("app")),
      notifier_(ServiceNotifier::from_environment(log_)),
      metrics_(SLUICE_VERSION),
      tls_(listeners_, metrics_, clock_, log::get("tls")),
      backend_tls_(*config_, log::get("tls")),
      auth_failures_(clock_),
      auth_(*config_, credentials_, auth_failures_, log::get("auth")),
      store_(make_store(config_->store, clock_, random_, metrics_)),
      breakers_(clock_, random_),
      top_users_(config_->admin.top_users
                     ? std::make_unique<insight::TopUsersRegistry>(clock_, thread_count(*config_))
                     : nullptr),
      sync_(*store_.store, breakers_, health_, metrics_, top_users_.get()),
      snapshots_(std::make_shared<const proxy::Snapshot>(config_, bind(*config_))),
      gate_(config_->http.max_connections),
      access_log_(config_->access_log),
      services_(clock_, snapshots_, gate_, access_log_, *store_.store,
                user_hash(config_->access_log, startup_error_), log::get("proxy")),
      history_([] { return std::chrono::system_clock::now(); },
               config_->admin.persist
                   ? std::optional(insight::ConfigHistory::file_beside(config_file_.path()))
                   : std::nullopt) {
  if (store_.error) {
    add_startup_error(startup_error_, *store_.error);
  }
  if (auto error = tls_.load()) {
    add_startup_error(startup_error_, *error);
  }
  if (const auto& error = backend_tls_.startup_error()) {
    add_startup_error(startup_error_, *error);
  }
  if (const auto& error = auth_.startup_error()) {
    add_startup_error(startup_error_, *error);
  }
  services_.credentials = &credentials_;
  services_.auth_failures = &auth_failures_;
  jwks_ = std::make_unique<JwksRefresher>(control_.get_executor(), auth_, credentials_, metrics_,
                                          log::get("auth"));
  if (auto error = jwks_->follow(config_->auth.jwt)) {
    add_startup_error(startup_error_, *error);
  }
  boost::system::error_code ec;
  if (!admin_token_ && !net::ip::make_address(config_->admin.address, ec).is_loopback()) {
    // docs/behaviour.md "Admin API": an open admin API may only listen on loopback (checked
    // here, so sluice refuses before it binds anything).
    add_startup_error(startup_error_,
                      "admin.address=" + config_->admin.address +
                          " is not loopback and no admin token is set (set the environment "
                          "variable " +
                          config_->admin.token_env.value_or("named by admin.token_env") + ")");
  }
  if (auto warning = history_.load()) {
    log_->warn("{}", *warning);
  }
  control_slot_ = store_.store->attach(control_);  // admin key lookups and the housekeeping
  metrics_.on_scrape([this] { refresh_gauges(); });
  checker_ = std::make_unique<proxy::HealthChecker>(control_.get_executor(), clock_, snapshots_,
                                                    health_, log::get("health"));
  make_fleet();
  for (const auto resource : admin::AdminApi::resources()) {
    metrics_.admin_changes(resource);  // every series exists from the start, at 0
  }
  admin_api_ = std::make_unique<admin::AdminApi>(
      admin::AdminContext{
          .current = [this]() -> const config::ConfigDocument& { return document_; },
          .commit =
              [this](config::ConfigDocument next, const admin::CommitOptions& options) {
                return commit(std::move(next), options);
              },
          .version = fleet_ ? std::function<std::uint64_t()>([this] { return fleet_->version(); })
                            : nullptr,
          .fleet =
              fleet_ ? std::function<nlohmann::json()>([this] { return fleet_->view(); }) : nullptr,
          .store = *store_.store,
          .store_slot = control_slot_,
          .breakers = breakers_,
          .health = health_,
          .metrics = metrics_,
          .key_label =
              [this](std::string_view key) {
                const auto label = proxy::user_label(services_.user_hash, key);
                return std::string(label.data(), label.size());
              },
          .clock = clock_,
          .tls_reload =
              [this] {
                auto error = reload_tls();
                metrics_.count_reload(!error);
                publish_outcome("cert_reload", error);
                return error;
              },
          .tls_certificates = [this] { return tls_.describe(); },
          .publish = [this](std::string_view type,
                            const nlohmann::json& data) { events_.publish(type, data); },
          .history = history_,
          .check_commit = [this](const config::ConfigDocument& next) { return check_commit(next); },
          .tls_preview = [this](nlohmann::json& would_serve) { return preview_tls(would_serve); },
          .audit = log::get("audit"),
          .top_users = top_users_.get(),
          .fleet_tops = fleet_ && top_users_
                            ? std::function<std::optional<std::map<std::string, std::string>>()>(
                                  [this] { return fleet_->published_tops(); })
                            : nullptr,
          .events = &events_,
          .fleet_events = fleet_ ? &fleet_events_ : nullptr,
          .share_draining = fleet_ ? std::function<std::optional<admin::CommitError>(
                                         const std::string&, const std::string&, bool)>(
                                         [this](const std::string& backend,
                                                const std::string& endpoint, bool draining) {
                                           return fleet_->share_draining(backend, endpoint,
                                                                         draining);
                                         })
                                   : nullptr,
          .breaker_history = [this] { return breaker_history(); },
          .api_keys = [this] { return credentials_.load()->api_keys; },
      },
      admin::BearerAuth(admin_token_), log::get("admin"));
  const std::size_t n = thread_count(*config_);
  workers_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<proxy::Worker>(services_, i));
    workers_.back()->attach_store();
    if (top_users_) {
      workers_.back()->attach_top_users(top_users_->ring(i));
    }
  }
}

Gateway::~Gateway() {
  for (auto& worker : workers_) {
    worker->context().stop();
  }
  for (auto& thread : threads_) {
    if (thread.joinable()) {
      thread.join();
    }
  }
  store_.store->stop();  // its sockets go before the io_contexts they live on
  gate_.clear_wakers();
}

int Gateway::run() {
  if (startup_error_) {
    log_->error("refusing to start: {}", *startup_error_);
    return 1;
  }
  record_version(insight::VersionSource::kStart);
  // Signals first: once the "ready" line is out (bind_admin), a SIGHUP must reload, not kill.
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.add(SIGHUP);
  signals_.add(SIGUSR1);
  if (!bind_listeners() || !bind_admin()) {
    return 1;
  }
  started_ = core::utc_iso8601(std::chrono::system_clock::now());
  start_fleet();  // before the listeners: the first request sees the fleet's version
  wait_for_signal();
  watch_config_file();
  store_.store->start();
  tls_.start_ocsp(control_.get_executor());
  schedule_tick();
  checker_->start();
  start_insight();
  threads_.reserve(workers_.size());
  for (auto& worker : workers_) {
    threads_.emplace_back([w = worker.get()] { w->context().run(); });
  }
  notifier_.ready("serving");
  control_.run();
  for (auto& worker : workers_) {
    worker->context().stop();
  }
  for (auto& thread : threads_) {
    thread.join();
  }
  threads_.clear();
  for (auto& worker : workers_) {
    worker->flush_access_log();  // the threads have stopped: their batches are safe to touch
  }
  access_log_.flush();
  return 0;
}

bool Gateway::bind_listeners() {
  // Every worker gets its own SO_REUSEPORT socket on every listener: all are bound first, so a
  // redirecting listener knows the port of the first TLS one (port 0 is only known then).
  std::vector<std::vector<proxy::Acceptor>> bound(listeners_.size());
  std::optional<std::uint16_t> https_port;
  for (std::size_t l = 0; l < listeners_.size(); ++l) {
    const config::ListenerConfig& listener = listeners_[l];
    boost::system::error_code ec;
    const auto address = net::ip::make_address(listener.address, ec);
    tcp::endpoint endpoint(address, listener.port);
    // SO_REUSEPORT lets any process of this user join a port: make sure none holds it first,
    // so two sluice processes never silently share one address.
    if (!ec && address_in_use(endpoint)) {
      log_->error(
          "cannot listen listener={} address={} port={} error=address in use (another "
          "process listens there)",
          listener.name, listener.address, listener.port);
      return false;
    }
    for (std::size_t i = 0; i < workers_.size() && !ec; ++i) {
      bound[l].emplace_back(make_acceptor(workers_[i]->context(), endpoint, true, ec));
      if (!ec && i == 0) {
        endpoint.port(bound[l][0].local_endpoint().port());  // port 0: the others share it
      }
    }
    if (ec) {
      log_->error("cannot listen listener={} address={} port={} error={}", listener.name,
                  listener.address, listener.port, ec.message());
      return false;
    }
    listener_endpoints_.push_back(endpoint);
    if (listener.tls && !https_port) {
      https_port = endpoint.port();
    }
  }
  for (std::size_t l = 0; l < listeners_.size(); ++l) {
    const config::ListenerConfig& listener = listeners_[l];
    proxy::Worker::ListenerSetup setup{
        listener.name, tls_.slot(l), {}, std::nullopt, listener.proxy_protocol};
    if (listener.tls) {
      setup.handshakes = {&metrics_.tls_handshakes(listener.name, "ok"),
                          &metrics_.tls_handshakes(listener.name, "error")};
    }
    if (listener.redirect_to_https) {
      setup.redirect_to_port = https_port;
    }
    if (listener.http2.enabled) {
      setup.http2 = http2::Settings{listener.http2.max_concurrent_streams, 0,
                                    listener.http2.max_stream_resets};
      goaways_.push_back(std::make_unique<proxy::GoawayCounters>(metrics_, listener.name));
      setup.goaways = goaways_.back().get();
    }
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      workers_[i]->add_listener(std::move(bound[l][i]), setup);
    }
  }
  for (auto& worker : workers_) {
    worker->start();
  }
  return true;
}

void Gateway::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) {
      return;
    }
    if (signal == SIGHUP) {
      reload();
    } else if (signal == SIGUSR1) {
      access_log_.reopen();  // logrotate moved the file: lines from now on go to a new one
    } else {
      begin_drain();
    }
    wait_for_signal();
  });
}

void Gateway::refresh_gauges() {
  fleet_tick();
  metrics_.downstream_connections().Set(static_cast<double>(gate_.open()));
  metrics_.tunnels_active().Set(
      static_cast<double>(services_.tunnels.load(std::memory_order_relaxed)));
  for (const auto& [name, breaker] : breakers_.all()) {
    const breaker::BreakerSnapshot window = breaker->snapshot();
    metrics::BackendMetrics& m = metrics_.backend(name);
    m.drop_probability->Set(window.drop_probability);
    m.window_requests->Set(static_cast<double>(window.requests));
    m.window_accepts->Set(static_cast<double>(window.accepts));
    const auto limit = breakers_.find_concurrency(name);
    std::optional<metrics::ConcurrencySample> sample;
    if (limit) {
      const breaker::ConcurrencySnapshot now = limit->snapshot();
      sample = metrics::ConcurrencySample{
          .limit = now.limit, .in_flight = now.in_flight, .rejections = now.rejections};
    }
    metrics_.publish_concurrency(name, sample);
  }
  const core::TimePoint now = clock_.now();
  for (const auto& [name, health] : health_.all()) {
    std::vector<metrics::EndpointSample> samples;
    for (auto& v : health->view(now)) {
      samples.push_back(
          {std::move(v.endpoint), v.state == health::EndpointState::kHealthy, v.ejections});
    }
    metrics_.publish_endpoints(name, samples, health->panics());
  }
  // A counter cannot be set: it catches up with the access log's own count.
  const std::uint64_t dropped = access_log_.dropped_lines();
  metrics_.access_log_dropped().Increment(static_cast<double>(dropped - dropped_reported_));
  dropped_reported_ = dropped;
  for (const auto& [name, policy] : config_->limits) {
    if (const auto id = store_.store->find(name)) {
      metrics_.policy(name).tracked_keys->Set(static_cast<double>(store_.store->tracked_keys(*id)));
    }
  }
}

void Gateway::end_ejections() {
  const core::TimePoint now = clock_.now();
  for (const auto& [name, health] : health_.all()) {
    for (const std::size_t i : health->end_ejections(now)) {
      log_->info("endpoint ejection over backend={} endpoint={}", name, health->label(i));
    }
  }
}

void Gateway::schedule_tick() {
  tick_timer_.expires_after(kTickInterval);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      store_.store->tick(control_slot_);
      auth_failures_.sweep();
      jwks_->tick();
      sync_.collect();
      end_ejections();
      tls_.tick();
      fleet_tick();
      schedule_tick();
    }
  });
}

void Gateway::begin_drain() {
  if (draining_) {
    log_->warn("second signal: cutting the drain short");
    drain_deadline_ = clock_.now();
    return;
  }
  draining_ = true;
  notifier_.stopping("draining");
  stop_insight();  // event streams end now: the drain waits for the data path alone
  services_.draining.store(true);
  drain_deadline_ = clock_.now() + config_->drain_timeout;
  log_->info("draining connections={} timeout_ms={}", gate_.active(),
             std::chrono::duration_cast<std::chrono::milliseconds>(config_->drain_timeout).count());
  for (auto& worker : workers_) {
    net::post(worker->context(), [w = worker.get()] {
      w->stop_accepting();
      w->close_idle_sessions();
    });
  }
  check_drain();
}

void Gateway::check_drain() {
  if (gate_.active() == 0) {
    finish();
    return;
  }
  if (clock_.now() >= drain_deadline_) {
    log_->warn("drain timeout: cutting connections={}", gate_.active());
    for (auto& worker : workers_) {
      net::post(worker->context(), [this, w = worker.get()] { cut_ += w->close_all_sessions(); });
    }
    drain_timer_.expires_after(kCutGrace);
    drain_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) {
        finish();
      }
    });
    return;
  }
  drain_timer_.expires_after(kDrainPoll);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      check_drain();
    }
  });
}

void Gateway::finish() {
  log_->info("drained cut={}", cut_.load());
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  tick_timer_.cancel();
  checker_->stop();
  if (fleet_) {
    fleet_->stop();  // joins the fleet thread (at most about half a heartbeat)
  }
  if (admin_) {
    admin_->stop();
  }
  stop_after_streams();  // then control_.stop()
}

}  // namespace sluice::app
