// SPDX-License-Identifier: Apache-2.0
#include "gateway/log/access_log.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "gateway/log/logging.hpp"

namespace sluice::log {
namespace {

constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                    '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

void escape_byte(std::string& out, unsigned char c) {
  switch (c) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    default:
      out += "\\u00";
      out += kHex[c >> 4U];
      out += kHex[c & 0xfU];
  }
}

/// The length of the valid UTF-8 sequence starting at s[i] (2-4), or 0 when it is not one
/// (RFC 3629 §4: no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return i + k < s.size() && at(k) >= lo && at(k) <= hi;
  };
  const unsigned char c = at(0);
  if (c >= 0xc2 && c <= 0xdf) {
    return cont(1) ? 2 : 0;
  }
  if (c == 0xe0) {
    return cont(1, 0xa0) && cont(2) ? 3 : 0;
  }
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
    return cont(1) && cont(2) ? 3 : 0;
  }
  if (c == 0xed) {
    return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;  // not a surrogate
  }
  if (c == 0xf0) {
    return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  }
  if (c >= 0xf1 && c <= 0xf3) {
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  }
  if (c == 0xf4) {
    return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/// Appends `s` as a JSON string: valid UTF-8 as it is; control characters and bytes that are not
/// valid UTF-8 escaped, so the line stays valid JSON whatever a client put in its request.
void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += static_cast<char>(c);
      ++i;
    } else if (c >= 0x80) {
      if (const std::size_t n = utf8_sequence(s, i); n > 0) {
        out.append(s.substr(i, n));
        i += n;
      } else {
        escape_byte(out, c);
        ++i;
      }
    } else {
      escape_byte(out, c);
      ++i;
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

/// `"YYYY-MM-DDTHH:MM:SS.mmmZ"`; the part down to the second is cached per thread, since a busy
/// thread writes many lines in the same second.
void append_timestamp(std::string& out, std::chrono::system_clock::time_point ts) {
  thread_local std::time_t cached_second = -1;
  thread_local std::array<char, 19> cached{};
  const auto since = ts.time_since_epoch();
  const auto seconds = std::chrono::floor<std::chrono::seconds>(since);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds);
  const std::time_t t = seconds.count();
  if (t != cached_second) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    fmt::format_to_n(cached.data(), cached.size(), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec);
    cached_second = t;
  }
  out += '"';
  out.append(cached.data(), cached.size());
  fmt::format_to(std::back_inserter(out), ".{:03}Z\"", millis.count());
}

int open_append(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

}  // namespace

void AccessLog::append(const AccessRecord& r, std::string& out) {
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
  fmt::format_to(std::back_inserter(out), ",\"attempts\":{}", r.attempts);
  append_field(out, "limit", r.limit);
  append_field(out, "breaker", r.breaker);
  append_field(out, "client_ip", r.client_ip);
  if (r.host.empty()) {
    out += ",\"host\":null";
  } else {
    append_field(out, "host", r.host);
  }
  append_field(out, "protocol", r.protocol);
  append_field(out, "listener", r.listener);
  append_field(out, "auth", r.auth);
  if (r.tier.empty()) {
    out += ",\"tier\":null";
  } else {
    append_field(out, "tier", r.tier);
  }
  if (r.grpc_status < 0) {
    out += ",\"grpc_status\":null";
  } else {
    out += ",\"grpc_status\":";
    out += std::to_string(r.grpc_status);
  }
  out += "}\n";
}

std::string AccessLog::format(const AccessRecord& record) {
  std::string out;
  out.reserve(384);
  append(record, out);
  out.pop_back();  // the newline
  return out;
}

AccessLog::AccessLog(const config::AccessLogConfig& config, Options options)
    : enabled_(config.enabled), path_(config.path), options_(options) {
  if (!enabled_) {
    return;
  }
  if (path_ == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = open_append(path_);
    if (fd_ < 0) {
      throw std::runtime_error("access_log.path: cannot open " + path_ + ": " +
                               std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
    }
    owns_fd_ = true;
  }
  writer_ = std::thread([this] { run_writer(); });
}

AccessLog::~AccessLog() {
  if (!enabled_) {
    return;
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  writer_.join();
  if (owns_fd_) {
    ::close(fd_);
  }
}

AccessLog::Batch::Batch(AccessLog& log) : log_(log), text_(log.take_buffer()) {}

AccessLog::Batch::~Batch() {
  flush();
}

void AccessLog::Batch::write(const AccessRecord& record) {
  append(record, text_);
  ++lines_;
  if (text_.size() >= log_.options_.batch_bytes) {
    flush();
  }
}

void AccessLog::Batch::flush() {
  if (lines_ == 0) {
    return;
  }
  log_.hand_over(text_, lines_);
  lines_ = 0;
}

void AccessLog::write(const AccessRecord& record) {
  if (!enabled_) {
    return;
  }
  std::string text;
  append(record, text);
  hand_over(text, 1);
}

std::string AccessLog::take_buffer() {
  std::string text;
  {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      text = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  if (text.capacity() < options_.batch_bytes) {
    text.reserve(options_.batch_bytes + 1024);  // a line past the mark still fits
  }
  return text;
}

void AccessLog::hand_over(std::string& text, std::size_t lines) {
  bool dropped = false;
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= options_.queue_batches) {
      dropped = true;  // the writer cannot keep up: never wait for it
    } else {
      queue_.push_back(Chunk{std::move(text), lines});
      if (!spare_.empty()) {
        text = std::move(spare_.back());
        spare_.pop_back();
      } else {
        text = std::string();
      }
    }
  }
  if (dropped) {
    dropped_.fetch_add(lines, std::memory_order_relaxed);
    text.clear();
    return;
  }
  if (text.capacity() < options_.batch_bytes) {
    text.reserve(options_.batch_bytes + 1024);
  }
  work_.notify_one();
}

void AccessLog::reopen() {
  if (!enabled_ || !owns_fd_) {
    return;
  }
  {
    std::lock_guard lock(mutex_);
    reopen_ = true;
  }
  work_.notify_one();
}

void AccessLog::flush() {
  if (!enabled_) {
    return;
  }
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

bool AccessLog::open_file() {
  const int fd = open_append(path_);
  if (fd < 0) {
    get("app")->error("access log reopen failed path={} error={}; still writing to the old file",
                      path_, std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
    return false;
  }
  ::close(fd_);
  fd_ = fd;
  get("app")->info("access log reopened path={}", path_);  // the writer thread, not an I/O one
  return true;
}

void AccessLog::write_chunk(const Chunk& chunk) {
  std::string_view rest = chunk.text;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      dropped_.fetch_add(chunk.lines, std::memory_order_relaxed);  // e.g. a full disk
      return;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  written_.fetch_add(chunk.lines, std::memory_order_relaxed);
}

void AccessLog::run_writer() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || reopen_ || !queue_.empty(); });
    if (reopen_) {
      reopen_ = false;
      lock.unlock();
      open_file();
      lock.lock();
    }
    if (queue_.empty()) {
      if (stopping_) {
        return;
      }
      continue;
    }
    Chunk chunk = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    write_chunk(chunk);
    chunk.text.clear();
    lock.lock();
    writing_ = false;
    if (spare_.size() < options_.queue_batches) {
      spare_.push_back(std::move(chunk.text));
    }
    if (queue_.empty()) {
      idle_.notify_all();
    }
  }
}

}  // namespace sluice::log
