// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <iosfwd>

#include "gateway/app/command_line.hpp"

namespace sluice::app {

/// `sluice replay --config NEW.json [--top N] [--format text|json] ACCESS.LOG`
/// (docs/operating.md "What-if replay"): re-decides every logged request under NEW's policies
/// and writes the report (text or JSON) to `out`. On `err`: warnings (overrides that cannot be
/// matched), progress every few seconds, and the first malformed lines with their numbers.
/// Returns 0; 1 when the config is invalid (every problem, as `--check` prints them) or the log
/// cannot be read. Malformed lines are counted, never fatal.
int run_replay(const ReplayArgs& args, std::ostream& out, std::ostream& err);

}  // namespace sluice::app
