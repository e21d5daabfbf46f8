// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/store/redis_protocol.hpp"

struct redisContext;

namespace sluice::fleet {

/// A blocking connection to the fleet's Redis through hiredis, with a deadline on connecting and
/// on every reply (docs/decisions/0021-fleet-through-redis.md: the fleet's calls are rare and
/// made off the data path, on the control thread or the fleet's own thread). A failed call drops
/// the connection; the next call connects again. A Redis Cluster's `MOVED` is followed, so a
/// fleet's keys (one hash slot) are found wherever they live. Confined to one thread.
class FleetRedis {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;
    std::optional<std::string> password;
    std::chrono::milliseconds timeout{1000};  ///< connect, and each reply
  };

  explicit FleetRedis(Options options);
  ~FleetRedis();
  FleetRedis(const FleetRedis&) = delete;
  FleetRedis& operator=(const FleetRedis&) = delete;

  /// The reply to the command `args` (a Redis error reply included), or nullopt when Redis cannot
  /// be reached or does not answer within `timeout` (options' when unset); error() says why.
  [[nodiscard]] std::optional<store::RedisReply> call(
      const std::vector<std::string>& args,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] bool connected() const noexcept { return context_ != nullptr; }
  void disconnect();

 private:
  bool connect(const std::string& host, std::uint16_t port);
  std::optional<store::RedisReply> send(const std::vector<std::string>& args,
                                        std::chrono::milliseconds timeout);

  Options options_;
  std::string host_;  ///< where the fleet's slot lives (a MOVED changes it)
  std::uint16_t port_;
  struct Free {
    void operator()(redisContext* context) const noexcept;
  };
  std::unique_ptr<redisContext, Free> context_;
  std::string error_;
};

}  // namespace sluice::fleet
