// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/rate_limit_fields.hpp"

#include <array>
#include <charconv>
#include <nlohmann/json.hpp>

namespace sluice::proxy {
namespace {

using FieldText = fmt::basic_memory_buffer<char, 96>;

void append(FieldText& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

void append(FieldText& out, std::uint64_t n) {
  std::array<char, 20> digits{};
  const auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), n);
  out.append(digits.data(), end);
}

/// `"NAME";a=X;b=Y`, assembled piece by piece: on every request, so no format-string parsing.
void compose(FieldText& out, std::string_view quoted_name, std::string_view a, std::uint64_t x,
             std::string_view b, std::uint64_t y) {
  out.clear();
  append(out, quoted_name);
  append(out, a);
  append(out, x);
  append(out, b);
  append(out, y);
}

}  // namespace

std::uint64_t whole_seconds_up(core::Duration d) noexcept {
  if (d <= core::Duration::zero()) {
    return 0;
  }
  const auto s = std::chrono::ceil<std::chrono::seconds>(d);
  return static_cast<std::uint64_t>(s.count());
}

std::string structured_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c < 0x20 || c > 0x7e) {
      out.push_back('?');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

void rate_limit_fields(const RouteLimit& limit, const limiter::LimitDecision& decision,
                       RateLimitFields& out) {
  std::uint64_t t = 0;
  if (decision.allowed) {
    out.retry_after_s = 0;
    t = whole_seconds_up(decision.reset);
  } else {
    out.retry_after_s = std::max<std::uint64_t>(1, whole_seconds_up(decision.retry_after));
    t = out.retry_after_s;
  }
  compose(out.policy_text, limit.quoted_name, ";q=", decision.limit, ";w=", limit.window_s);
  compose(out.state_text, limit.quoted_name, ";r=", decision.allowed ? decision.remaining : 0U,
          ";t=", t);
}

std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string limited_body(const RouteLimit& limit, std::uint64_t retry_after_s) {
  return R"({"error":"rate_limited","policy":)" + limit.json_name + R"(,"retry_after_s":)" +
         std::to_string(retry_after_s) + "}";
}

}  // namespace sluice::proxy
