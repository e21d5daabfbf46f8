// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/access_log.hpp"

#include <fmt/format.h>
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <ctime>

namespace sluice::log {
namespace {

/// Appends `s` as a JSON string. Bytes outside printable ASCII are escaped as \u00XX, so the
/// line stays valid JSON whatever a client put in its request line.
void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  out += '"';
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += ",\"";
  out += name;
  out += "\":";
  append_string(out, value);
}

void append_timestamp(std::string& out, std::chrono::system_clock::time_point ts) {
  const auto since = ts.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds);
  const std::time_t t = seconds.count();
  std::tm tm{};
  gmtime_r(&t, &tm);
  fmt::format_to(std::back_inserter(out), "\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 millis.count());
}

std::shared_ptr<spdlog::logger> make_logger(const config::AccessLogConfig& config) {
  if (!config.enabled) {
    return nullptr;
  }
  spdlog::sink_ptr sink;
  if (config.path == "-") {
    sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(config.path, false);
  }
  sink->set_pattern("%v");
  return std::make_shared<spdlog::async_logger>("access", sink, spdlog::thread_pool(),
                                                spdlog::async_overflow_policy::overrun_oldest);
}

}  // namespace

AccessLog::AccessLog(const config::AccessLogConfig& config) : logger_(make_logger(config)) {}

std::string AccessLog::format(const AccessRecord& r) {
  std::string out;
  out.reserve(384);
  out += "{\"ts\":";
  append_timestamp(out, r.ts);
  append_field(out, "request_id", r.request_id);
  append_field(out, "method", r.method);
  append_field(out, "path", r.path);
  append_field(out, "route", r.route);
  append_field(out, "backend", r.backend);
  append_field(out, "endpoint", r.endpoint);
  if (r.user) {
    append_field(out, "user", *r.user);
  } else {
    out += ",\"user\":null";
  }
  fmt::format_to(std::back_inserter(out),
                 R"(,"status":{},"bytes_in":{},"bytes_out":{},"duration_ms":{:.3f})", r.status,
                 r.bytes_in, r.bytes_out, r.duration_ms);
  if (r.upstream_ms) {
    fmt::format_to(std::back_inserter(out), ",\"upstream_ms\":{:.3f}", *r.upstream_ms);
  } else {
    out += ",\"upstream_ms\":null";
  }
  append_field(out, "limit", r.limit);
  append_field(out, "breaker", r.breaker);
  out += '}';
  return out;
}

void AccessLog::write(const AccessRecord& record) {
  if (logger_) {
    const std::string line = format(record);
    // A plain message, never a format string: a path may contain "{}".
    logger_->log(spdlog::level::info, spdlog::string_view_t(line.data(), line.size()));
  }
}

void AccessLog::flush() {
  if (logger_) {
    logger_->flush();
  }
}

}  // namespace sluice::log
