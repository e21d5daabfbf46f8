// SPDX-License-Identifier: Apache-2.0
#include "tests/support/metrics_text.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "tests/support/http_client.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {

Scrape scrape_metrics(std::uint16_t admin_port) {
  HttpClient admin(admin_port);
  const Response res = admin.get("/metrics");
  if (res.result_int() != 200) {
    throw std::runtime_error("GET /metrics: " + std::to_string(res.result_int()) + " " +
                             res.body());
  }
  return Scrape(res.body());
}

Scrape scrape_metrics(const SluiceProcess& gateway) {
  return scrape_metrics(gateway.admin_port());
}

double metric_value(const SluiceProcess& gateway, std::string_view name, const Labels& labels) {
  return scrape_metrics(gateway).value(name, labels);
}

Scrape scrape_until(std::uint16_t admin_port, std::string_view what,
                    const std::function<bool(const Scrape&)>& done,
                    std::chrono::milliseconds timeout) {
  std::optional<Scrape> last;
  const auto held = wait_until(
      what,
      [&] {
        last.emplace(scrape_metrics(admin_port));
        return done(*last);
      },
      timeout, std::chrono::milliseconds(20));
  if (!held) {
    ADD_FAILURE() << held.message();
  }
  return std::move(*last);
}

Scrape scrape_until(const SluiceProcess& gateway, std::string_view what,
                    const std::function<bool(const Scrape&)>& done,
                    std::chrono::milliseconds timeout) {
  return scrape_until(gateway.admin_port(), what, done, timeout);
}

}  // namespace sluice::testing
