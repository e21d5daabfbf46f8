// SPDX-License-Identifier: Apache-2.0
// Dry runs, config versions, rollback and audit lines (docs/operating.md "Dry runs", "Versions
// and rollback", "Audit lines"; docs/decisions/0017-config-versions.md).
#include <boost/beast/http.hpp>
#include <charconv>
#include <utility>

#include "gateway/admin/admin_api.hpp"
#include "gateway/admin/admin_call.hpp"
#include "gateway/admin/admin_replies.hpp"

namespace sluice::admin {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::size_t kMaxAuditLine = 16 * 1024;  // bytes of one audit line
constexpr std::size_t kAuditSlack = 64;           // room for the "changes_omitted" member

std::optional<std::uint64_t> insight_version_number(std::string_view text) {
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size() || number == 0) {
    return std::nullopt;
  }
  return number;
}

// The restart-only fields in which `target` differs from what runs, as rollback reports them.
std::vector<std::string> insight_needs_restart(const config::ConfigDocument& running,
                                               const ordered_json& target) {
  const auto loaded = config::ConfigDocument::from_json(target);
  if (loaded.ok()) {
    return insight::restart_only_changes(running.config(), loaded.document->config());
  }
  std::vector<std::string> fields;  // the old version no longer validates: compare as written
  for (const std::string_view member : insight::restart_only_members()) {
    const std::string key(member);
    if (running.json().value(key, ordered_json()) != target.value(key, ordered_json())) {
      fields.push_back(key);
    }
  }
  return fields;
}

/// If-Match: one version number, bare or as a quoted entity tag ("12", W/"12").
std::optional<std::uint64_t> if_match_version(std::string_view text) {
  if (text.starts_with("W/")) {
    text.remove_prefix(2);
  }
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);
  }
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return number;
}

}  // namespace

std::uint64_t AdminApi::current_version() const {
  if (context_.version) {
    return context_.version();
  }
  const auto* latest = context_.history.latest();
  return latest != nullptr ? latest->version : 0;
}

// /admin/config/versions, /admin/config/versions/{v}, /admin/config/rollback.
Response AdminApi::route_config(const Call& call) {
  const auto& s = call.segments;
  const auto& req = call.req;
  if (s[1] == "versions" && (s.size() == 2 || s.size() == 3)) {
    if (req.method() != http::verb::get) {
      return method_not_allowed(req, "GET");
    }
    return s.size() == 2 ? versions(call) : version(call, s[2]);
  }
  if (s.size() == 2 && s[1] == "rollback") {
    return req.method() == http::verb::post ? rollback(call) : method_not_allowed(req, "POST");
  }
  return not_found(req, "no such admin resource");
}

Response AdminApi::versions(const Call& call) {
  json list = json::array();
  const auto& all = context_.history.versions();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {  // newest first
    list.push_back(json(insight::to_json(*it, false)));
  }
  return reply(call.req, http::status::ok, {{"versions", std::move(list)}});
}

Response AdminApi::version(const Call& call, const std::string& number) {
  const auto parsed = insight_version_number(number);
  const insight::ConfigVersion* found = parsed ? context_.history.find(*parsed) : nullptr;
  if (found == nullptr) {
    return not_found(call.req, "no version \"" + number + "\" (the last " +
                                   std::to_string(insight::ConfigHistory::kCapacity) +
                                   " are kept)");
  }
  return reply(call.req, http::status::ok, json(insight::to_json(*found, true)));
}

Response AdminApi::rollback(const Call& call) {
  auto body = read_object(call.req, "");
  if (auto* error = std::get_if<Response>(&body)) {
    return std::move(*error);
  }
  auto member = only_member(call.req, std::get<ordered_json>(body), "", "version");
  if (auto* error = std::get_if<Response>(&member)) {
    return std::move(*error);
  }
  const auto& value = std::get<ordered_json>(member);
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0) {
    return field_error(call.req, "must be a version number (1 or more)", "version");
  }
  const std::uint64_t to = value.get<std::uint64_t>();
  const insight::ConfigVersion* target = context_.history.find(to);
  if (target == nullptr) {
    return not_found(call.req, "no version " + std::to_string(to) + " (the last " +
                                   std::to_string(insight::ConfigHistory::kCapacity) +
                                   " are kept)");
  }
  // What only a restart applies stays as it runs now; the answer names what would differ.
  const json needs_restart = insight_needs_restart(context_.current(), target->config);
  ordered_json next = target->config;
  insight::keep_restart_only(context_.current().json(), next);
  auto outcome = change(call, std::move(next), "rollback", "v" + std::to_string(to),
                        insight::VersionSource::kRollback,
                        {{"rolled_back_to", to}, {"needs_restart", needs_restart}});
  if (auto* answer = std::get_if<Response>(&outcome)) {
    return std::move(*answer);
  }
  const Committed& committed = std::get<Committed>(outcome);
  log_->info("admin rollback peer={} to_version={} version={} needs_restart={}", show(call.peer),
             to, committed.version, needs_restart.dump());
  context_.publish("rollback",
                   {{"version", committed.version}, {"to_version", to}, {"actor", auth_.actor()}});
  return reply(call.req, http::status::ok,
               {{"version", committed.version},
                {"rolled_back_to", to},
                {"changes", insight::to_json(committed.changes)},
                {"needs_restart", needs_restart}});
}

std::variant<Response, AdminApi::Committed> AdminApi::change(const Call& call, ordered_json next,
                                                             std::string_view resource,
                                                             const std::string& subject,
                                                             insight::VersionSource source,
                                                             const json& dry_run_extra) {
  auto validated = config::ConfigDocument::from_json(std::move(next));
  if (!validated.ok()) {
    log_->info("admin change rejected peer={} resource={} name={} field={} error={}",
               show(call.peer), resource, subject, validated.problems.front().path,
               validated.problems.front().message);
    return problems_reply(call.req, validated.problems);
  }
  auto changes = insight::config_changes(context_.current().json(), validated.document->json(),
                                         context_.key_label);
  CommitOptions options;
  if (const auto header = call.req.find(http::field::if_match); header != call.req.end()) {
    options.if_match = if_match_version(header->value());
    if (!options.if_match) {
      return reply(call.req, http::status::bad_request,
                   {{"error", "bad_if_match"},
                    {"detail", "If-Match takes one config version number, e.g. \"12\""}});
    }
    const std::uint64_t now = current_version();
    if (!context_.fleet && *options.if_match != now) {
      return reply(call.req, http::status::precondition_failed,
                   {{"error", "version_mismatch"}, {"current", now}});
    }
  }
  options.summary = insight::summarize(changes);
  std::optional<CommitError> error;
  if (call.dry_run) {
    // Everything commit() could refuse is checked too, so a dry run fails as the call would.
    error = context_.check_commit ? context_.check_commit(*validated.document) : std::nullopt;
    if (!error) {
      json answer = {{"dry_run", true}, {"changes", insight::to_json(changes)}};
      if (dry_run_extra.is_object()) {
        answer.update(dry_run_extra);
      }
      return reply(call.req, http::status::ok, answer);
    }
  } else {
    error = context_.commit(std::move(*validated.document), options);
  }
  if (error) {
    log_->error("admin change{} not applied peer={} resource={} name={} error={}",
                call.dry_run ? " (dry run)" : "", show(call.peer), resource, subject,
                error->detail);
    return commit_error_reply(call.req, *error);
  }
  context_.metrics.count_admin_change(resource);
  std::optional<std::string> warning;
  const std::string summary = insight::summarize(changes);
  const std::uint64_t version =
      context_.history.record(source, auth_.actor(), summary, context_.current().json(), warning)
          .version;
  if (warning) {
    log_->warn("{}", *warning);
  }
  audit(call, version, resource, subject, changes);
  if (source == insight::VersionSource::kAdmin) {
    context_.publish("admin_change", {{"version", version},
                                      {"resource", resource},
                                      {"subject", subject},
                                      {"actor", auth_.actor()},
                                      {"summary", summary}});
  }
  return Committed{version, std::move(changes)};
}

void AdminApi::audit(const Call& call, const json& version, std::string_view resource,
                     const std::string& subject,
                     const std::vector<insight::ConfigChange>& changes) {
  // The path of an override holds a raw user key: its label stands for it, as in the subject.
  std::string path = "/admin";
  for (std::size_t i = 0; i < call.segments.size(); ++i) {
    const bool is_key = resource == "overrides" && i == 3;
    path += "/" + (is_key ? context_.key_label(call.segments[i]) : call.segments[i]);
  }
  ordered_json line = {{"event", "admin_change"},
                       {"version", version},
                       {"actor", auth_.actor()},
                       {"peer", show(call.peer)},
                       {"method", std::string(call.req.method_string())},
                       {"path", std::move(path)},
                       {"resource", resource},
                       {"subject", subject},
                       {"changes", ordered_json::array()}};
  if (const insight::ConfigVersion* latest = context_.history.latest();
      latest != nullptr && latest->fleet && version == latest->version) {
    line["fleet_version"] = latest->fleet->version;  // before the changes: they may be cut
    line["replica"] = latest->fleet->replica;
  }
  std::size_t size = line.dump(-1, ' ', false, json::error_handler_t::replace).size() + kAuditSlack;
  std::size_t omitted = 0;
  for (const json& item : insight::to_json(changes)) {
    const std::size_t item_size =
        item.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
    if (omitted == 0 && size + item_size <= kMaxAuditLine) {
      line["changes"].push_back(ordered_json(item));
      size += item_size;
    } else {
      ++omitted;  // in order: once one is left out, so is every later one
    }
  }
  if (omitted != 0) {
    line["changes_omitted"] = omitted;
  }
  const auto& logger = context_.audit ? context_.audit : log_;
  logger->info("{}", line.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace sluice::admin
