// SPDX-License-Identifier: Apache-2.0
// Access log lines as `sluice replay` reads them (gateway/replay): whatever the fast scanner
// accepts, nlohmann::json reads the same way; and the whole input, as a log, through a replay
// whose counts add up.
#include "gateway/config/config_loader.hpp"
#include "gateway/replay/log_line.hpp"
#include "gateway/replay/replay_session.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {
namespace {

/// A new config with the router fallback's cases: hosts, methods, a prefix per policy, a route
/// without a limit, an override.
const config::Config& replay_fuzz_config() {
  static const config::Config config =
      config::parse_config_text(R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},
        "store":{"max_keys":256},
        "limits":{"standard":{"requests":3,"window_ms":1000,"buckets":10},
                  "login":{"requests":1,"window_ms":60000,"mode":"shadow"}},
        "overrides":{"standard":{"vip":{"requests":10}}},
        "routes":[{"name":"login","prefix":"/login","backend":"b","limit":"login",
                   "methods":["POST"]},
                  {"name":"api","prefix":"/api","backend":"b","limit":"standard",
                   "host":"api.example"},
                  {"name":"web","prefix":"/","backend":"b"}]})")
          .config.value();
  return config;
}

}  // namespace

int access_log_line(Input input) {
  const std::string_view text = text_of(input);
  for (std::string_view rest = text; !rest.empty();) {
    const auto newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    replay::LogLine fast;
    if (replay::scan_log_line(line, fast)) {
      nlohmann::json doc;
      replay::LogLine slow;
      SLUICE_FUZZ_CHECK(replay::parse_log_line_json(line, doc, slow).empty());
      SLUICE_FUZZ_CHECK(fast == slow);
    }
  }
  replay::ReplayOptions options;
  options.user_hash = core::KeyedHash::from_secret("access-log-line-fuzz-secret");
  options.reorder_window = std::chrono::milliseconds(500);
  replay::ReplaySession session(replay_fuzz_config(), std::move(options));
  session.feed(text.substr(0, text.size() / 2));  // a line cut in two pieces, usually
  session.feed(text.substr(text.size() / 2));
  session.finish();
  const replay::ReplayReport report = session.report();
  SLUICE_FUZZ_CHECK(report.replayed + report.malformed + report.unrouted_then +
                        report.unrouted_now ==
                    report.lines);
  std::uint64_t requests = 0;
  for (const replay::PolicyTotals& p : report.policies) {
    SLUICE_FUZZ_CHECK(p.allowed_then + p.limited_then == p.requests);
    SLUICE_FUZZ_CHECK(p.allowed_now + p.limited_now == p.requests);
    requests += p.requests;
  }
  SLUICE_FUZZ_CHECK(requests == report.replayed);
  return 0;
}

}  // namespace sluice::fuzz
