// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/sluice_process.hpp"

// Reading a Prometheus text scrape in integration tests (metrics_test.cpp has the full parser
// and its own test; this is the small lookup the other tests need). Free functions.
namespace sluice::testing {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// The value of series `name` with exactly the labels `want` (any order) in a Prometheus text
/// scrape; 0 when absent (a counter not created yet).
double metric_value(std::string_view scrape, std::string_view name, Labels want);

/// GET /metrics on the gateway's admin listener (throws unless 200).
std::string scrape_metrics(const SluiceProcess& gateway);

}  // namespace sluice::testing
