// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/admin/admin_server.hpp"
#include "gateway/admin/bearer_auth.hpp"
#include "gateway/auth/api_key_table.hpp"
#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/config/config_document.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/health/health_registry.hpp"
#include "gateway/insight/config_changes.hpp"
#include "gateway/insight/config_history.hpp"
#include "gateway/insight/event_feed.hpp"
#include "gateway/insight/top_users.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::admin {

/// Why a valid change was not applied.
struct CommitError {
  enum class Kind : std::uint8_t {
    kPersistFailed,     ///< writing the config file failed (500 persist_failed)
    kFileChanged,       ///< the file was edited since sluice read or wrote it (409)
    kFleetUnavailable,  ///< the fleet's Redis did not answer (503 fleet_unavailable)
    kVersionMismatch,   ///< If-Match named another version than `current` (412)
    kFleetConflict,     ///< the change no longer fits the fleet's newer version (409)
  };
  Kind kind = Kind::kPersistFailed;
  std::string detail;
  std::uint64_t current = 0;  ///< kVersionMismatch: the version now
};

/// How a change is committed: `if_match` (the If-Match header) makes it conditional on the
/// config version; `summary` describes it (the fleet's change log keeps it).
struct CommitOptions {
  std::optional<std::uint64_t> if_match;
  std::string summary;
};

/// What the admin API reads and changes; the gateway (the composition root) provides it. The
/// references must outlive the API.
struct AdminContext {
  /// The config document the gateway runs on now.
  std::function<const config::ConfigDocument&()> current;
  /// Makes `next` the running config: written to the config file first (with admin.persist),
  /// then installed for the next request on every thread. On an error nothing changed, in
  /// memory or on disk.
  std::function<std::optional<CommitError>(config::ConfigDocument next,
                                           const CommitOptions& options)>
      commit;
  /// The config version If-Match is compared with: the fleet's in a fleet, else the newest of
  /// `history`. Empty: the latter.
  std::function<std::uint64_t()> version{};
  /// GET /admin/fleet; empty when the fleet is off.
  std::function<nlohmann::json()> fleet{};
  store::LimitStore& store;
  /// The admin thread's own slot in the store (its connection, for a networked store).
  store::StoreSlot store_slot;
  breaker::BreakerRegistry& breakers;
  /// Each backend's endpoint states (GET and PUT /admin/backends/{b}/endpoints/...).
  health::HealthRegistry& health;
  metrics::Metrics& metrics;
  /// How a raw user key appears in logs (the access log's `user` label).
  std::function<std::string(std::string_view key)> key_label;
  const core::Clock& clock;
  /// Re-reads the TLS listeners' certificate files (`POST /admin/tls/reload`): the problem,
  /// with every old certificate kept, or nothing when the new ones are served.
  std::function<std::optional<std::string>()> tls_reload;
  /// The certificates served now (`GET /admin/tls`).
  std::function<nlohmann::json()> tls_certificates;
  /// Emits one event of `type` to the live event feed (`GET /admin/events`;
  /// docs/operating.md "Live events"); `data` gets its `ts` there.
  std::function<void(std::string_view type, nlohmann::json data)> publish;
  /// The config versions (docs/operating.md "Versions and rollback"): every applied change is
  /// recorded here as a version of source admin or rollback.
  insight::ConfigHistory& history;
  /// What commit(next) would answer, with nothing changed (`?dry_run=true`): the backends'
  /// TLS files and, with admin.persist, the config file unchanged on disk. Empty: no checks.
  std::function<std::optional<CommitError>(const config::ConfigDocument& next)> check_commit;
  /// `POST /admin/tls/reload?dry_run=true`: checks every certificate file, installs nothing;
  /// the problem, or nothing with `would_serve` set to what tls_certificates() would answer.
  std::function<std::optional<std::string>(nlohmann::json& would_serve)> tls_preview;
  /// The audit logger (one JSON line per applied change); null: the API's own logger.
  std::shared_ptr<spdlog::logger> audit;
  /// Each policy's heavy hitters (`GET /admin/limits/{policy}/top`; docs/operating.md "Heavy
  /// hitters"); null when `admin.top_users` is off.
  insight::TopUsersRegistry* top_users = nullptr;
  /// Every replica's heavy hitters from the fleet's Redis (`?scope=fleet`; docs/fleet.md),
  /// nullopt when it did not answer; empty when the fleet or top_users is off.
  std::function<std::optional<std::map<std::string, std::string>>()> fleet_tops{};
  insight::EventFeed* events = nullptr;        ///< behind `GET /admin/events`; null: 503
  insight::EventFeed* fleet_events = nullptr;  ///< `?scope=fleet`; null: no fleet
  /// A fleet's drain of an endpoint on every replica (error: not taken); empty: no fleet.
  std::function<std::optional<CommitError>(const std::string& backend, const std::string& endpoint,
                                           bool draining)>
      share_draining{};
  /// `GET /admin/insight/breakers`: each breaker's recent drop probabilities; empty: 404.
  std::function<nlohmann::json()> breaker_history{};
  /// The API keys in force (keys_file's and the config's; docs/identity.md "API keys"); empty
  /// or null: none.
  std::function<std::shared_ptr<const auth::ApiKeyTable>()> api_keys{};
};

/// The `/admin/` REST API (docs/behaviour.md "Admin API"): JSON in and out, bearer-token auth,
/// validation of every change as part of the whole config (a bad body changes nothing), and an
/// audit log line plus `sluice_admin_changes_total{resource}` for every accepted change. Changes
/// edit the operator's config document, so persisting keeps everything else as written.
///
/// Confined to the admin thread (the control io_context). Changes never suspend between reading
/// the current config and committing the next one, so concurrent admin requests are serialized
/// and none is lost; only key lookups suspend (the store may answer asynchronously).
class AdminApi {
 public:
  /// The `resource` label values of sluice_admin_changes_total.
  static const std::vector<std::string_view>& resources();

  AdminApi(AdminContext context, BearerAuth auth, std::shared_ptr<spdlog::logger> log);

  /// Answers a request whose path starts with /admin/ from `peer` (`/admin/events` streams).
  boost::asio::awaitable<Reply> handle(const Request& req,
                                       const boost::asio::ip::tcp::endpoint& peer);

 private:
  struct Call;
  using ViewFn = std::function<nlohmann::json(const config::Config&)>;

  void note_unauthorized(const boost::asio::ip::tcp::endpoint& peer, std::string_view method);
  Response route(const Call& call);
  Response route_limits(const Call& call);
  Response route_backend(const Call& call);
  boost::asio::awaitable<Response> key_state(const Call& call, const std::string& policy,
                                             const std::string& key);

  Response put_policy(const Call& call, const std::string& policy);
  Response delete_policy(const Call& call, const std::string& policy);
  Response put_override(const Call& call, const std::string& policy, const std::string& key);
  Response delete_override(const Call& call, const std::string& policy, const std::string& key);
  Response backends(const Call& call);
  Response put_breaker(const Call& call, const std::string& backend);
  Response put_endpoints(const Call& call, const std::string& backend);
  Response put_routes(const Call& call);
  // endpoint_state_api.cpp (docs/endpoint-health.md "Admin"):
  Response endpoint_states(const Call& call, const std::string& backend);
  Response put_endpoint_state(const Call& call, const std::string& backend,
                              const std::string& endpoint);
  Response route_tls(const Call& call);
  // auth_keys_api.cpp (docs/identity.md "API keys"):
  Response route_auth_keys(const Call& call);
  // event_stream.cpp (docs/operating.md "Live events"):
  Reply events(const Call& call);
  Response breaker_history(const Call& call);
  // top_users_api.cpp (docs/operating.md "Heavy hitters"):
  Response top_users(const Call& call, const std::string& policy);
  /// `?scope=fleet`: every replica's published heavy hitters of `policy`, merged.
  Response fleet_top_users(const Call& call, const std::string& policy, std::size_t n);
  // insight_api.cpp (docs/operating.md "Versions and rollback", "Dry runs", "Audit lines"):
  struct Committed {
    std::uint64_t version = 0;
    std::vector<insight::ConfigChange> changes;
  };
  /// /admin/config/versions[/{v}] and /admin/config/rollback.
  Response route_config(const Call& call);
  Response versions(const Call& call);
  Response version(const Call& call, const std::string& number);
  Response rollback(const Call& call);
  /// The version If-Match is compared with (AdminContext::version).
  [[nodiscard]] std::uint64_t current_version() const;
  /// Validates `next` as a whole config and, unless this is a dry run, commits it, counts it,
  /// records it as a version of `source`, writes its audit line and publishes its event.
  /// A Response when the call ends here: invalid, a dry run (`dry_run_extra` merged into the
  /// answer), or not committed.
  std::variant<Response, Committed> change(const Call& call, nlohmann::ordered_json next,
                                           std::string_view resource, const std::string& subject,
                                           insight::VersionSource source,
                                           const nlohmann::json& dry_run_extra = nullptr);
  /// One JSON line on the audit logger, at most kMaxAuditLine bytes (changes beyond that are
  /// counted, not listed). `version` null: a change that is not a config version.
  void audit(const Call& call, const nlohmann::json& version, std::string_view resource,
             const std::string& subject, const std::vector<insight::ConfigChange>& changes);

  /// Validates `next` as a whole config; if valid, commits it, counts and logs the change, and
  /// answers with `view` of the new config (204 when `view` gives null).
  Response apply(const Call& call, nlohmann::ordered_json next, std::string_view resource,
                 const std::string& subject, const ViewFn& view);

  AdminContext context_;
  BearerAuth auth_;
  std::shared_ptr<spdlog::logger> log_;
  core::TimePoint next_unauthorized_log_{};
  std::uint64_t unauthorized_suppressed_ = 0;
};

}  // namespace sluice::admin
