// SPDX-License-Identifier: Apache-2.0
// GET /admin/backends/{b}/endpoints and PUT /admin/backends/{b}/endpoints/{endpoint}/state
// (docs/endpoint-health.md "Admin").
#include <boost/beast/http.hpp>
#include <chrono>

#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_replies.hpp"

namespace sluice::admin {
namespace {

/// A steady-clock instant as Unix milliseconds (0 for the epoch: "not ejected").
std::int64_t unix_ms_of(core::TimePoint at, core::TimePoint now) {
  if (at == core::TimePoint{}) {
    return 0;
  }
  const auto wall = std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(at - now);
  return std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
}

}  // namespace

Response AdminApi::endpoint_states(const Call& call, const std::string& backend) {
  const auto health = context_.health.find(backend);
  if (!health) {
    return not_found(call.req, "no backend named \"" + backend + "\"");
  }
  const core::TimePoint now = context_.clock.now();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : health->view(now)) {
    list.push_back({{"endpoint", v.endpoint},
                    {"state", health::to_string(v.state)},
                    {"active_requests", v.active_requests},
                    {"consecutive_failures", v.consecutive_failures},
                    {"ejected_until_ms", unix_ms_of(v.ejected_until, now)},
                    {"ejections", v.ejections}});
  }
  return reply(call.req, boost::beast::http::status::ok, {{"endpoints", std::move(list)}});
}

Response AdminApi::put_endpoint_state(const Call& call, const std::string& backend,
                                      const std::string& endpoint) {
  const auto health = context_.health.find(backend);
  if (!health) {
    return not_found(call.req, "no backend named \"" + backend + "\"");
  }
  if (!health->find(endpoint)) {
    return not_found(call.req, "backend \"" + backend + "\" has no endpoint \"" + endpoint + "\"");
  }
  const std::string base = config::member_path(
      config::member_path(config::member_path("backends", backend), "endpoints"), endpoint);
  auto body = read_object(call.req, base);
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  auto state = only_member(call.req, std::get<nlohmann::ordered_json>(body), base, "state");
  if (auto* error = std::get_if<Response>(&state)) {
    return std::move(*error);
  }
  const auto& value = std::get<nlohmann::ordered_json>(state);
  if (!value.is_string() || (value != "draining" && value != "active")) {
    return field_error(call.req, "must be \"draining\" or \"active\"",
                       config::member_path(base, "state"));
  }
  const bool draining = value == "draining";
  // Runtime state, not config: no version, but a dry run, an audit line and an event all the same.
  const bool was_draining = health->state(*health->find(endpoint), context_.clock.now()) ==
                            health::EndpointState::kDraining;
  std::vector<insight::ConfigChange> changes;
  if (was_draining != draining) {
    changes.push_back({insight::ConfigChange::Op::kReplace, config::member_path(base, "state"),
                       was_draining ? "draining" : "active", value});
  }
  if (call.dry_run) {
    return reply(call.req, boost::beast::http::status::ok,
                 {{"dry_run", true}, {"changes", insight::to_json(changes)}});
  }
  if (context_.share_draining) {  // a fleet: every replica's, or nobody's (docs/fleet.md)
    if (auto error = context_.share_draining(backend, endpoint, draining)) {
      log_->error("admin change not applied peer={} resource=endpoint_state name={}/{} error={}",
                  show(call.peer), backend, endpoint, error->detail);
      return commit_error_reply(call.req, *error);
    }
  }
  health->set_draining(endpoint, draining);
  context_.metrics.count_admin_change("endpoint_state");
  log_->info("admin change peer={} resource=endpoint_state name={}/{} state={}", show(call.peer),
             backend, endpoint, draining ? "draining" : "active");
  const std::string subject = backend + "/" + endpoint;
  audit(call, nullptr, "endpoint_state", subject, changes);
  context_.publish("admin_change", {{"version", nullptr},
                                    {"resource", "endpoint_state"},
                                    {"subject", subject},
                                    {"actor", auth_.actor()},
                                    {"summary", insight::summarize(changes)}});
  return endpoint_states(call, backend);
}

}  // namespace sluice::admin
