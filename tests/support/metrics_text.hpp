// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "tests/support/prometheus_text.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/timeouts.hpp"

// Reading a running gateway's metrics in integration tests: GET /metrics on its admin listener,
// parsed by Scrape (prometheus_text.hpp). Free functions; each scrape is a fresh connection.
namespace sluice::testing {

/// GET /metrics on the admin listener at 127.0.0.1:`admin_port`, parsed. Throws
/// std::runtime_error unless the answer is a 200 with a well-formed body.
[[nodiscard]] Scrape scrape_metrics(std::uint16_t admin_port);
[[nodiscard]] Scrape scrape_metrics(const SluiceProcess& gateway);

/// One scrape's value of the series `name` with exactly `labels`; throws MissingSeries (naming
/// the series) when the gateway does not export it. Never 0 for a missing series.
[[nodiscard]] double metric_value(const SluiceProcess& gateway, std::string_view name,
                                  const Labels& labels = {});

/// Scrapes until `done(scrape)` holds, for at most `timeout`, and returns the last scrape
/// either way. On timeout it adds a test failure naming `what` (so the assertions the caller
/// makes on the returned scrape are not the only sign). Metrics are recorded on the gateway's
/// worker threads just after a response goes out, so a scrape right after the last response
/// could miss them: poll instead.
Scrape scrape_until(std::uint16_t admin_port, std::string_view what,
                    const std::function<bool(const Scrape&)>& done,
                    std::chrono::milliseconds timeout = kDefaultTimeout);
Scrape scrape_until(const SluiceProcess& gateway, std::string_view what,
                    const std::function<bool(const Scrape&)>& done,
                    std::chrono::milliseconds timeout = kDefaultTimeout);

}  // namespace sluice::testing
