// SPDX-License-Identifier: Apache-2.0
// The admin API on a fresh gateway state per input: the first line is `METHOD TARGET`, the rest
// is the body. Every answer must be a status the API uses and, when it says JSON, be JSON.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>

#include "gateway/admin/admin_api.hpp"
#include "gateway/insight/config_history.hpp"
#include "gateway/proxy/routing/config_sync.hpp"
#include "gateway/store/memory_store.hpp"
#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/fuzz/fuzz_world.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"

namespace sluice::fuzz {
namespace {

namespace http = boost::beast::http;

/// What the gateway composes around the admin API (gateway/app/gateway.cpp), in memory: a
/// commit installs the document and syncs the store, breakers and endpoint states, as a reload
/// does.
struct AdminWorld {
  AdminWorld()
      : document(*config::ConfigDocument::from_json(http_fuzz_config()).document),
        store(clock, store::MemoryStore::Options{}),
        breakers(clock, random),
        metrics("fuzz"),
        sync(store, breakers, health, metrics) {
    (void)sync.apply(document.config());
  }

  admin::AdminContext context() {
    return admin::AdminContext{
        .current = [this]() -> const config::ConfigDocument& { return document; },
        .commit = [this](config::ConfigDocument next,
                         const admin::CommitOptions&) -> std::optional<admin::CommitError> {
          (void)sync.apply(next.config());
          document = std::move(next);
          return std::nullopt;
        },
        .store = store,
        .store_slot = store::StoreSlot{},
        .breakers = breakers,
        .health = health,
        .metrics = metrics,
        .key_label = [](std::string_view key) { return std::string(key.substr(0, 12)); },
        .clock = clock,
        .tls_reload = []() -> std::optional<std::string> { return std::nullopt; },
        .tls_certificates = [] { return nlohmann::json::array(); },
        .publish = [](std::string_view, const nlohmann::json&) {},
        .history = history,
        .check_commit = nullptr,
        .tls_preview = nullptr,
        .audit = nullptr,
    };
  }

  testing::ManualClock clock;
  testing::ScriptedRandom random;
  config::ConfigDocument document;
  store::MemoryStore store;
  breaker::BreakerRegistry breakers;
  health::HealthRegistry health;
  metrics::Metrics metrics;
  proxy::ConfigSync sync;
  /// Versions in memory only, on a fixed wall time: an input's answer depends on it alone.
  insight::ConfigHistory history{[] { return std::chrono::system_clock::time_point{}; },
                                 std::nullopt};
};

/// The request the admin listener would hand over: only targets under /admin reach the API
/// (gateway/app/gateway.cpp); others are put there.
admin::Request admin_request_from(std::string_view text) {
  const std::size_t line_end = std::min(text.find('\n'), text.size());
  const std::string_view line = text.substr(0, line_end);
  const std::size_t space = line.find(' ');
  const std::string_view method = space == std::string_view::npos ? "GET" : line.substr(0, space);
  std::string target(space == std::string_view::npos ? line : line.substr(space + 1));
  if (!(target == "/admin" || target.starts_with("/admin/") || target.starts_with("/admin?"))) {
    target.insert(0, "/admin/");
  }
  admin::Request req;
  req.method_string(method.empty() ? std::string_view("GET") : method);
  req.target(target);
  req.body() = std::string(text.substr(std::min(line_end + 1, text.size())));
  req.prepare_payload();
  return req;
}

}  // namespace

int admin_request(Input input) {
  admin::Request req;
  try {
    req = admin_request_from(text_of(input));
  } catch (const boost::system::system_error&) {
    return 0;  // Beast refuses a method or target no HTTP/1.1 head could carry
  }
  AdminWorld world;
  admin::AdminApi api(world.context(), admin::BearerAuth(std::nullopt), log::get("admin"));
  boost::asio::io_context ioc;
  std::optional<admin::Response> answer;
  const boost::asio::ip::tcp::endpoint peer(boost::asio::ip::make_address("127.0.0.1"), 40000);
  boost::asio::co_spawn(ioc, api.handle(req, peer),
                        [&](const std::exception_ptr& escaped, admin::Reply res) {
                          SLUICE_FUZZ_CHECK(!escaped);
                          answer = std::move(res.head);  // a stream's head (no feed: none)
                        });
  ioc.run();
  SLUICE_FUZZ_CHECK(answer.has_value());
  const unsigned status = answer->result_int();
  SLUICE_FUZZ_CHECK(status >= 200 && status < 600);
  if (answer->base()[http::field::content_type].starts_with("application/json") &&
      !answer->body().empty()) {
    SLUICE_FUZZ_CHECK(nlohmann::json::accept(answer->body()));
  }
  return 0;
}

}  // namespace sluice::fuzz
