// SPDX-License-Identifier: Apache-2.0
#include "tests/support/metrics_text.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "tests/support/http_client.hpp"

namespace sluice::testing {

double metric_value(std::string_view scrape, std::string_view name, Labels want) {
  std::sort(want.begin(), want.end());
  std::size_t start = 0;
  while (start < scrape.size()) {
    const std::size_t end = std::min(scrape.find('\n', start), scrape.size());
    const std::string_view line = scrape.substr(start, end - start);
    start = end + 1;
    if (!line.starts_with(name) || line.size() == name.size()) {
      continue;
    }
    std::size_t pos = name.size();
    Labels labels;
    if (line[pos] == '{') {
      ++pos;
      while (pos < line.size() && line[pos] != '}') {
        const std::size_t eq = line.find("=\"", pos);
        if (eq == std::string_view::npos) {
          break;
        }
        std::string label(line.substr(pos, eq - pos));
        std::string value;
        for (pos = eq + 2; pos < line.size() && line[pos] != '"'; ++pos) {
          if (line[pos] == '\\' && pos + 1 < line.size()) {
            ++pos;
            value += line[pos] == 'n' ? '\n' : line[pos];
          } else {
            value += line[pos];
          }
        }
        pos += (pos + 1 < line.size() && line[pos + 1] == ',') ? 2 : 1;
        labels.emplace_back(std::move(label), std::move(value));
      }
      ++pos;
    }
    if (pos >= line.size() || line[pos] != ' ') {
      continue;  // another family whose name starts with `name`
    }
    std::sort(labels.begin(), labels.end());
    if (labels == want) {
      return std::strtod(std::string(line.substr(pos + 1)).c_str(), nullptr);
    }
  }
  return 0;
}

std::string scrape_metrics(const SluiceProcess& gateway) {
  HttpClient admin(gateway.admin_port());
  const Response res = admin.get("/metrics");
  if (res.result_int() != 200) {
    throw std::runtime_error("GET /metrics: " + std::to_string(res.result_int()));
  }
  return res.body();
}

}  // namespace sluice::testing
