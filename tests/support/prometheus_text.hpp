// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The one Prometheus text-format (0.0.4) parser of the tests: every test that reads a /metrics
// scrape (the gateway's, or Metrics::scrape() in a unit test) goes through Scrape. Pure; no I/O.
namespace sluice::testing {

/// A series' labels as (name, value) pairs; any order where a caller passes them.
using Labels = std::vector<std::pair<std::string, std::string>>;

/// `name{a="x",b="y"}` with the labels sorted by name and the values escaped as in the text
/// format (`\\`, `\"`, `\n`): one series whatever order an exposition printed its labels in.
[[nodiscard]] std::string series_key(std::string_view name, Labels labels);

/// Thrown by Scrape::value() for a series the scrape does not have. The message names the
/// series and lists the series of the same name that the scrape does have.
class MissingSeries : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One parsed scrape: every sample and every `# TYPE` line. Immutable after construction;
/// thread-safe to read.
///
/// The grammar is the text format 0.0.4's: `name [{label="value",...[,]}] value [timestamp]`,
/// blanks or tabs between tokens, label values with the escapes `\\`, `\"` and `\n`, values
/// as Go's ParseFloat reads them (`NaN`, `+Inf`, `-Inf` included), `# HELP`/`# TYPE`/other
/// comment lines, empty lines. Anything else is an error: a scrape that is not well-formed
/// fails the test instead of being half-read.
class Scrape {
 public:
  struct Series {
    std::string name;
    Labels labels;  // sorted by name
    double value = 0;
  };

  /// Parses `text`. Throws std::runtime_error naming the first malformed line, a duplicated
  /// label or a duplicated series.
  explicit Scrape(std::string_view text);

  /// The series `name` with exactly the labels `labels` (any order); nullopt if absent. For
  /// callers that expect absence, or for series that legitimately appear only later (a
  /// labelled counter exists from its first increment): say so at the call site.
  [[nodiscard]] std::optional<double> find(std::string_view name, const Labels& labels = {}) const;
  /// The same, but a missing series is an error: throws MissingSeries. Never a silent 0.
  [[nodiscard]] double value(std::string_view name, const Labels& labels = {}) const;
  /// The sum over every series `name` whose labels include all of `subset` (0 if none does).
  [[nodiscard]] double sum(std::string_view name, const Labels& subset = {}) const;
  /// The `# TYPE` of a family ("" if the scrape has no TYPE line for it).
  [[nodiscard]] std::string type(std::string_view family) const;

  [[nodiscard]] const std::vector<Series>& series() const noexcept { return series_; }
  /// The text this was parsed from.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
  std::vector<Series> series_;
  std::map<std::string, double, std::less<>> values_;  // by series_key
  std::map<std::string, std::string, std::less<>> types_;
};

}  // namespace sluice::testing
