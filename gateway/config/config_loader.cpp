// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/config_loader.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "gateway/config/config_sections.hpp"
#include "gateway/config/json_reader.hpp"

namespace sluice::config {
namespace {

LoadResult failure(std::string path, std::string message) {
  return {std::nullopt, {Problem{std::move(path), std::move(message)}}};
}

// Keys of the object member `key` of the document, for cross references. An absent optional
// section declares nothing; an absent required one or a non-object is unknown (no checks).
detail::KnownNames names_of(const nlohmann::json& document, std::string_view key,
                            Presence presence) {
  const auto it = document.find(key);
  if (it == document.end()) {
    return presence == Presence::kRequired ? std::nullopt : detail::KnownNames(std::in_place);
  }
  if (!it->is_object()) {
    return std::nullopt;
  }
  detail::KnownNames names(std::in_place);
  for (auto member = it->begin(); member != it->end(); ++member) {
    names->insert(member.key());
  }
  return names;
}

// A client_cert identity source yields only on a listener that verifies client certificates.
void check_client_cert_identity(ObjectReader& root, const Config& config) {
  for (std::size_t i = 0; i < config.identity.size(); ++i) {
    const bool verifies =
        std::any_of(config.listeners.begin(), config.listeners.end(),
                    [](const ListenerConfig& l) { return l.tls && l.tls->client_ca.has_value(); });
    if (config.identity[i].kind == IdentitySource::Kind::kClientCert && !verifies) {
      root.problems().add(element_path(root.path_of("identity"), i) + ".client_cert",
                          "needs a listener whose tls has a client_ca");
    }
  }
}

/// The identity sources that verify need their `auth` section, and a route that asks for a
/// credential needs a source that verifies one (docs/identity.md).
void check_auth_sources(ObjectReader& root, const Config& config) {
  using Kind = IdentitySource::Kind;
  bool verifying = false;
  for (std::size_t i = 0; i < config.identity.size(); ++i) {
    const Kind kind = config.identity[i].kind;
    const auto path = element_path(root.path_of("identity"), i);
    if (kind == Kind::kJwt && !config.auth.jwt) {
      root.problems().add(path + ".jwt", "needs auth.jwt");
    } else if (kind == Kind::kApiKey && !config.auth.api_keys) {
      root.problems().add(path + ".api_key", "needs auth.api_keys");
    }
    verifying = verifying || kind == Kind::kJwt || kind == Kind::kApiKey;
  }
  for (std::size_t i = 0; i < config.routes.size(); ++i) {
    if (config.routes[i].auth != RouteAuth::kOff && !verifying) {
      root.problems().add(element_path(root.path_of("routes"), i) + ".auth",
                          R"(needs a {"jwt": true} or {"api_key": true} identity source)");
    }
  }
}

/// A PROXY header is believed only from a trusted proxy: without any, every connection of a
/// `proxy_protocol` listener would be refused.
void check_proxy_protocol(ObjectReader& root, const Config& config) {
  for (std::size_t i = 0; i < config.listeners.size(); ++i) {
    if (config.listeners[i].proxy_protocol && config.http.trusted_proxies.empty()) {
      root.problems().add(element_path(root.path_of("listeners"), i) + ".proxy_protocol",
                          "needs http.trusted_proxies (the balancers allowed to send the header)");
    }
  }
}

Config parse_document(ObjectReader& root, const nlohmann::json& document) {
  Config config;
  config.listeners = detail::parse_listeners(root);
  config.admin = detail::parse_admin(root);
  config.threads = root.integer<std::uint32_t>("threads", 0, 1024).value_or(config.threads);
  config.drain_timeout =
      root.duration_ms("drain_timeout_ms", 0, 3600000).value_or(config.drain_timeout);
  config.config_watch = root.boolean("config_watch").value_or(config.config_watch);
  config.http = detail::parse_http(root);
  check_proxy_protocol(root, config);
  config.access_log = detail::parse_access_log(root);
  config.identity = detail::parse_identity(root);
  check_client_cert_identity(root, config);
  config.auth = detail::parse_auth(root);
  config.store = detail::parse_store(root);
  config.fleet = detail::parse_fleet(root, config.store);
  const auto policies = names_of(document, "limits", Presence::kOptional);
  const auto backends = names_of(document, "backends", Presence::kRequired);
  config.limits = detail::parse_limits(root);
  config.overrides = detail::parse_overrides(root, policies);
  config.tiers = detail::parse_tiers(root, policies);
  config.backends = detail::parse_backends(root);
  config.routes = detail::parse_routes(root, config.http.merge_slashes, backends, policies);
  check_auth_sources(root, config);
  return config;
}

// nlohmann reports the byte offset of a syntax error; count lines and columns (from 1) the way
// its own messages do, so the numbers match what an editor shows for ASCII files.
std::string syntax_error_message(std::string_view text, const nlohmann::json::parse_error& error) {
  const auto consumed = text.substr(0, std::min<std::size_t>(error.byte, text.size()));
  const auto line = 1 + std::count(consumed.begin(), consumed.end(), '\n');
  const auto last_newline = consumed.rfind('\n');
  const auto line_start = last_newline == std::string_view::npos ? 0 : last_newline + 1;
  const auto column = error.byte - line_start;
  // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: DETAIL".
  std::string_view detail = error.what();
  if (const auto column_at = detail.find("column "); column_at != std::string_view::npos) {
    if (const auto colon = detail.find(": ", column_at); colon != std::string_view::npos) {
      detail.remove_prefix(colon + 2);
    }
  }
  return "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
         ": " + std::string(detail);
}

// Reports keys that appear twice in one object, which nlohmann would silently collapse (the last
// one wins): a pasted policy block must not quietly replace another. Runs as the parser callback,
// so it sees keys in document order; it tracks the path of every open object and array.
// Confined to one parse; references `problems`, which must outlive it.
class DuplicateKeyFinder {
 public:
  explicit DuplicateKeyFinder(Problems& problems) : problems_(problems) {}

  bool on_event(nlohmann::ordered_json::parse_event_t event, const nlohmann::ordered_json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        frames_.push_back(Frame{next_child_path(), event == Event::array_start, 0, {}, {}});
        break;
      case Event::key: {
        auto& frame = frames_.back();
        frame.last_key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.last_key).second) {
          problems_.add(member_path(frame.path, frame.last_key), "duplicate key");
        }
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        break;
      case Event::value:
        static_cast<void>(next_child_path());  // a scalar takes up an array index
        break;
    }
    return true;  // keep everything
  }

 private:
  struct Frame {
    std::string path;
    bool is_array = false;
    std::size_t next_index = 0;
    std::set<std::string, std::less<>> keys;
    std::string last_key;
  };

  // The path of the value that starts now.
  std::string next_child_path() {
    if (frames_.empty()) {
      return {};
    }
    auto& frame = frames_.back();
    return frame.is_array ? element_path(frame.path, frame.next_index++)
                          : member_path(frame.path, frame.last_key);
  }

  Problems& problems_;
  std::vector<Frame> frames_;
};

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { static_cast<void>(std::fclose(file)); }
};

std::string system_message(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

// Reads the whole file into `contents`; on failure returns the reason.
std::optional<std::string> read_file(const std::filesystem::path& path, std::string& contents) {
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    return system_message(errno);
  }
  constexpr std::size_t kChunk = std::size_t{64} * 1024;
  std::array<char, kChunk> buffer{};
  for (;;) {
    const auto count = std::fread(buffer.data(), 1, buffer.size(), file.get());
    contents.append(buffer.data(), count);
    if (count < buffer.size()) {
      // fread on a directory fails here with EISDIR.
      return std::ferror(file.get()) != 0 ? std::optional(system_message(errno)) : std::nullopt;
    }
  }
}

}  // namespace

LoadResult parse_config(const nlohmann::json& document) {
  if (!document.is_object()) {
    return failure("(root)", "must be an object");
  }
  try {
    Problems problems;
    ObjectReader root(document, "", problems);
    auto config = parse_document(root, document);
    root.finish();
    if (!problems.empty()) {
      return {std::nullopt, std::move(problems).release()};
    }
    return {std::move(config), {}};
  } catch (const std::exception& error) {
    // Validation checks types before every get<>(), so this is a bug or out-of-memory; still,
    // the loader's contract is to report, not throw.
    return failure("(root)", std::string("internal error while validating: ") + error.what());
  }
}

LoadResult parse_config(const nlohmann::ordered_json& document) {
  const auto overrides = document.is_object() ? document.find("overrides") : document.end();
  auto plain =
      overrides == document.end() ? std::nullopt : detail::read_plain_overrides(*overrides);
  if (!plain) {
    return parse_config(nlohmann::json(document));
  }
  // The overrides are read; parse_overrides still checks each policy name, on empty objects.
  nlohmann::json rest = nlohmann::json::object();
  for (const auto& [key, value] : document.items()) {
    if (key != "overrides") {
      rest[key] = nlohmann::json(value);
      continue;
    }
    auto& policies = rest[key] = nlohmann::json::object();
    for (const auto& [policy, names] : value.items()) {
      policies[policy] = nlohmann::json::object();
    }
  }
  auto result = parse_config(rest);
  if (result.config) {
    result.config->overrides = std::move(*plain);
  }
  return result;
}

JsonText parse_json_text(std::string_view text) {
  JsonText result;
  Problems duplicates;
  try {
    DuplicateKeyFinder finder(duplicates);
    result.json = nlohmann::ordered_json::parse(
        text.begin(), text.end(),
        [&finder](int /*depth*/, nlohmann::ordered_json::parse_event_t event,
                  nlohmann::ordered_json& parsed) { return finder.on_event(event, parsed); });
  } catch (const nlohmann::json::parse_error& error) {
    return {std::nullopt, {Problem{"(root)", syntax_error_message(text, error)}}};
  } catch (const std::exception& error) {
    return {std::nullopt, {Problem{"(root)", std::string("invalid JSON: ") + error.what()}}};
  }
  result.problems = std::move(duplicates).release();
  return result;
}

LoadResult parse_config_text(std::string_view text) {
  auto parsed = parse_json_text(text);
  if (!parsed.json) {
    return {std::nullopt, std::move(parsed.problems)};
  }
  auto result = parse_config(*parsed.json);
  return merge_problems(std::move(parsed.problems), std::move(result));
}

LoadResult merge_problems(std::vector<Problem> first, LoadResult result) {
  if (first.empty()) {
    return result;
  }
  first.insert(first.end(), std::make_move_iterator(result.problems.begin()),
               std::make_move_iterator(result.problems.end()));
  return {std::nullopt, std::move(first)};
}

std::optional<Problem> read_config_file(const std::filesystem::path& path, std::string& text) {
  try {
    if (auto error = read_file(path, text)) {
      return Problem{path.string(), "cannot read: " + *error};
    }
  } catch (const std::exception& error) {  // out of memory for a huge file
    return Problem{path.string(), std::string("cannot read: ") + error.what()};
  }
  return std::nullopt;
}

LoadResult load_config_file(const std::filesystem::path& path) {
  std::string text;
  if (auto problem = read_config_file(path, text)) {
    return {std::nullopt, {std::move(*problem)}};
  }
  return parse_config_text(text);
}

}  // namespace sluice::config
