// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <iosfwd>

#include "gateway/app/command_line.hpp"

namespace sluice::app {

/// `sluice --check`: loads and validates the config, and loads every TLS listener's certificates
/// and keys; prints `config ok` to `out` and returns 0, or prints every problem as
/// `path.to.field: message` lines to `err` and returns 1 (docs/behaviour.md "Command line").
/// A certificate that expires within 14 days is a `warning: ...` line on `err`, not an error.
int run_check(const CommandLine& command_line, std::ostream& out, std::ostream& err);

}  // namespace sluice::app
