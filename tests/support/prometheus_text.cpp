// SPDX-License-Identifier: Apache-2.0
#include "tests/support/prometheus_text.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace sluice::testing {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

/// Metric names are [a-zA-Z_:][a-zA-Z0-9_:]*, label names the same without ':'.
bool is_name_char(char c, bool first, bool colon_allowed) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return letter || (colon_allowed && c == ':') || (!first && c >= '0' && c <= '9');
}

/// A cursor over one line; every error names the line and the column.
class LineReader {
 public:
  explicit LineReader(std::string_view line) : line_(line) {}

  [[nodiscard]] std::runtime_error error(std::string_view what) const {
    return std::runtime_error(std::string(what) + " at column " + std::to_string(pos_ + 1) +
                              " of the metrics line: " + std::string(line_));
  }
  [[nodiscard]] bool at_end() const { return pos_ >= line_.size(); }
  [[nodiscard]] char peek() const { return at_end() ? '\0' : line_[pos_]; }
  void advance() { ++pos_; }
  void skip_blanks() {
    while (!at_end() && is_blank(line_[pos_])) {
      ++pos_;
    }
  }
  void expect(char c) {
    if (peek() != c) {
      throw error(std::string("expected '") + c + "'");
    }
    ++pos_;
  }
  void expect_end() {
    skip_blanks();
    if (!at_end()) {
      throw error("unexpected trailing text");
    }
  }
  std::string_view name(bool metric) {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(line_[pos_], pos_ == start, metric)) {
      ++pos_;
    }
    if (pos_ == start) {
      throw error(metric ? "expected a metric name" : "expected a label name");
    }
    return line_.substr(start, pos_ - start);
  }
  /// Up to the next blank or the end.
  std::string_view token() {
    const std::size_t start = pos_;
    while (!at_end() && !is_blank(line_[pos_])) {
      ++pos_;
    }
    return line_.substr(start, pos_ - start);
  }
  /// A double-quoted label value, unescaped.
  std::string quoted() {
    expect('"');
    std::string value;
    while (!at_end() && line_[pos_] != '"') {
      const char c = line_[pos_++];
      if (c != '\\') {
        value += c;
        continue;
      }
      const char escaped = peek();
      if (escaped == 'n') {
        value += '\n';
      } else if (escaped == '\\' || escaped == '"') {
        value += escaped;
      } else {
        throw error("invalid escape in a label value");
      }
      ++pos_;
    }
    if (at_end()) {
      throw error("unterminated label value");
    }
    ++pos_;  // the closing quote
    return value;
  }

 private:
  std::string_view line_;
  std::size_t pos_ = 0;
};

Labels parse_labels(LineReader& in) {
  Labels labels;
  in.expect('{');
  in.skip_blanks();
  while (in.peek() != '}') {
    std::string label(in.name(/*metric=*/false));
    in.skip_blanks();
    in.expect('=');
    in.skip_blanks();
    labels.emplace_back(std::move(label), in.quoted());
    in.skip_blanks();
    if (in.peek() == ',') {  // a trailing comma before '}' is allowed
      in.advance();
      in.skip_blanks();
    } else if (in.peek() != '}') {
      throw in.error("expected ',' or '}'");
    }
  }
  in.advance();  // '}'
  std::sort(labels.begin(), labels.end());
  for (std::size_t i = 1; i < labels.size(); ++i) {
    if (labels[i].first == labels[i - 1].first) {
      throw in.error("duplicate label " + labels[i].first);
    }
  }
  return labels;
}

Scrape::Series parse_sample(LineReader& in) {
  Scrape::Series s;
  s.name = std::string(in.name(/*metric=*/true));
  in.skip_blanks();
  if (in.peek() == '{') {
    s.labels = parse_labels(in);
    in.skip_blanks();
  }
  const std::string value(in.token());
  char* end = nullptr;
  s.value = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size()) {
    throw in.error("expected a sample value");
  }
  in.skip_blanks();
  if (!in.at_end()) {
    const std::string_view timestamp = in.token();
    std::int64_t ms = 0;
    const auto [ptr, ec] =
        std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), ms);
    if (ec != std::errc() || ptr != timestamp.data() + timestamp.size()) {
      throw in.error("expected an integer timestamp");
    }
  }
  in.expect_end();
  return s;
}

}  // namespace

std::string series_key(std::string_view name, Labels labels) {
  std::sort(labels.begin(), labels.end());
  std::string key(name);
  if (labels.empty()) {
    return key;
  }
  key += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    key += i == 0 ? "" : ",";
    key += labels[i].first + "=\"";
    for (const char c : labels[i].second) {
      if (c == '\n') {
        key += "\\n";
      } else {
        if (c == '"' || c == '\\') {
          key += '\\';
        }
        key += c;
      }
    }
    key += '"';
  }
  key += '}';
  return key;
}

Scrape::Scrape(std::string_view text) : text_(text) {
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    LineReader in(text.substr(start, end - start));
    start = end + 1;
    in.skip_blanks();
    if (in.at_end()) {
      continue;  // empty lines are allowed anywhere
    }
    if (in.peek() == '#') {
      in.advance();
      in.skip_blanks();
      const std::string_view keyword = in.token();
      if (keyword == "TYPE") {
        in.skip_blanks();
        std::string family(in.name(/*metric=*/true));
        in.skip_blanks();
        const std::string_view type = in.token();
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
            type != "untyped") {
          throw in.error("unknown metric type");
        }
        in.expect_end();
        if (!types_.emplace(family, std::string(type)).second) {
          throw in.error("a second TYPE line for " + family);
        }
      } else if (keyword == "HELP") {
        in.skip_blanks();
        (void)in.name(/*metric=*/true);  // the docstring is free text
      }                                  // any other comment is ignored
      continue;
    }
    Series s = parse_sample(in);
    std::string key = series_key(s.name, s.labels);
    if (!values_.emplace(key, s.value).second) {
      throw in.error("duplicate series " + key);
    }
    series_.push_back(std::move(s));
  }
}

std::optional<double> Scrape::find(std::string_view name, const Labels& labels) const {
  const auto it = values_.find(series_key(name, labels));
  return it == values_.end() ? std::nullopt : std::optional<double>(it->second);
}

double Scrape::value(std::string_view name, const Labels& labels) const {
  if (const auto found = find(name, labels)) {
    return *found;
  }
  std::ostringstream message;
  message << "the scrape has no series " << series_key(name, labels);
  std::size_t same_name = 0;
  for (const Series& s : series_) {
    if (s.name == name && ++same_name <= 20) {
      message << (same_name == 1 ? "; it has " : ", ") << series_key(s.name, s.labels) << " "
              << s.value;
    }
  }
  if (same_name == 0) {
    message << " (and no series of that name at all)";
  } else if (same_name > 20) {
    message << " and " << same_name - 20 << " more";
  }
  throw MissingSeries(message.str());
}

double Scrape::sum(std::string_view name, const Labels& subset) const {
  double total = 0;
  for (const Series& s : series_) {
    const bool match = s.name == name && std::all_of(subset.begin(), subset.end(), [&](auto& l) {
                         return std::find(s.labels.begin(), s.labels.end(), l) != s.labels.end();
                       });
    total += match ? s.value : 0;
  }
  return total;
}

std::string Scrape::type(std::string_view family) const {
  const auto it = types_.find(family);
  return it == types_.end() ? std::string() : it->second;
}

}  // namespace sluice::testing
