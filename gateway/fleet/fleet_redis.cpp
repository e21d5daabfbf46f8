// SPDX-License-Identifier: Apache-2.0
#include "gateway/fleet/fleet_redis.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <utility>

namespace sluice::fleet {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

/// "MOVED 1234 10.0.0.5:7001": where the slot lives now.
std::optional<std::pair<std::string, std::uint16_t>> moved_to(const std::string& error) {
  if (error.rfind("MOVED ", 0) != 0) {
    return std::nullopt;
  }
  const auto space = error.find(' ', 6);
  const auto colon = error.rfind(':');
  if (space == std::string::npos || colon == std::string::npos || colon < space) {
    return std::nullopt;
  }
  std::uint16_t port = 0;
  const char* first = error.data() + colon + 1;
  if (std::from_chars(first, error.data() + error.size(), port).ec != std::errc{}) {
    return std::nullopt;
  }
  return std::pair{error.substr(space + 1, colon - space - 1), port};
}

}  // namespace

void FleetRedis::Free::operator()(redisContext* context) const noexcept {
  redisFree(context);
}

FleetRedis::FleetRedis(Options options)
    : options_(std::move(options)), host_(options_.host), port_(options_.port) {}

FleetRedis::~FleetRedis() = default;

void FleetRedis::disconnect() {
  context_.reset();
}

bool FleetRedis::connect(const std::string& host, std::uint16_t port) {
  const timeval timeout = to_timeval(options_.timeout);
  context_.reset(redisConnectWithTimeout(host.c_str(), port, timeout));
  if (!context_ || context_->err != 0) {
    error_ = context_ ? context_->errstr : "cannot allocate a Redis context";
    context_.reset();
    return false;
  }
  if (options_.password) {
    const auto reply = send({"AUTH", *options_.password}, options_.timeout);
    if (!reply || reply->is_error()) {
      error_ = reply ? "AUTH: " + reply->text : error_;
      context_.reset();
      return false;
    }
  }
  return true;
}

std::optional<store::RedisReply> FleetRedis::send(const std::vector<std::string>& args,
                                                  std::chrono::milliseconds timeout) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const auto& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  redisSetTimeout(context_.get(), to_timeval(timeout));
  auto* raw = static_cast<redisReply*>(
      redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (raw == nullptr) {
    error_ = context_->errstr[0] != '\0' ? context_->errstr : "no reply";
    context_.reset();  // the stream is out of step now: start again
    return std::nullopt;
  }
  store::RedisReply reply = store::from_hiredis(*raw);
  freeReplyObject(raw);
  return reply;
}

std::optional<store::RedisReply> FleetRedis::call(
    const std::vector<std::string>& args, std::optional<std::chrono::milliseconds> timeout) {
  for (int hop = 0; hop < 3; ++hop) {
    if (!context_ && !connect(host_, port_)) {
      return std::nullopt;
    }
    auto reply = send(args, timeout.value_or(options_.timeout));
    if (!reply) {
      return std::nullopt;
    }
    if (reply->is_error()) {
      if (auto target = moved_to(reply->text)) {
        host_ = std::move(target->first);
        port_ = target->second;
        context_.reset();
        continue;
      }
    }
    return reply;
  }
  error_ = "too many MOVED redirections";
  return std::nullopt;
}

}  // namespace sluice::fleet
