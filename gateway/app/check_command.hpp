// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <iosfwd>

#include "gateway/app/command_line.hpp"

namespace sluice::app {

/// `sluice --check`: loads and validates the config; prints `config ok` to `out` and returns 0,
/// or prints every problem as `path.to.field: message` lines to `err` and returns 1
/// (docs/behaviour.md "Command line").
int run_check(const CommandLine& command_line, std::ostream& out, std::ostream& err);

}  // namespace sluice::app
