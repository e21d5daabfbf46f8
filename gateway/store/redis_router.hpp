// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/store/redis_cluster_map.hpp"
#include "gateway/store/redis_connection.hpp"

namespace sluice::store {

/// Sends each command to the Redis that holds its key: one standalone Redis, or the master of
/// the key's hash slot in a Redis Cluster. Which of the two it is talking to, it learns by
/// itself: once the seed connection (the configured address) is up, it asks CLUSTER SLOTS; an
/// error reply means a standalone Redis (or a proxy), a slot map means a cluster. In a cluster it
/// keeps one RedisConnection per master, follows MOVED (updating the slot and refreshing the map)
/// and ASK (ASKING, then the command, on the named node) redirects, and refreshes the map when a
/// slot's master is unknown or unreachable (at most once per `refresh_interval`), so a failover
/// or a reshard is followed without a restart.
///
/// Confined to the thread running its io_context, like RedisConnection. Held by shared_ptr;
/// close() stops it.
class RedisRouter : public std::enable_shared_from_this<RedisRouter> {
 public:
  using Handler = RedisConnection::Handler;

  struct Options {
    /// The seed (host, port) and what every connection shares: timeouts, backoff, `setup`
    /// (run on every node). Its on_ready/on_down are replaced by the router's.
    RedisConnection::Options connection;
    std::chrono::milliseconds refresh_interval{1000};
    unsigned max_redirects = 5;
    /// Called whenever a connection becomes ready once the topology is known (the first time
    /// with it): the moment to (re)read anything kept in Redis.
    std::function<void()> on_ready;
  };

  RedisRouter(boost::asio::io_context& ioc, Options options, const core::Clock& clock,
              core::Random& random, std::shared_ptr<spdlog::logger> log);

  void start();
  void close();
  /// The topology is known: commands can be routed (a command whose node is down is still
  /// answered kUnavailable at once).
  [[nodiscard]] bool ready() const noexcept;
  [[nodiscard]] bool cluster() const noexcept { return mode_ == Mode::kCluster; }
  /// Masters this router knows (1 for a standalone Redis).
  [[nodiscard]] std::size_t nodes() const noexcept;

  /// Sends `command` (RESP bytes) to the node of `key`'s slot; `handler` is called exactly once,
  /// as for RedisConnection::execute. A redirected command gets a fresh timeout on its new node.
  void execute(std::string_view key, std::string command, Handler handler);
  /// Sends a group of `count` commands on keys of `key`'s hash slot as one pipelined group to
  /// that slot's node (RedisConnection::execute_group). Redirects are not followed inside a
  /// group: a MOVED or ASK reply stays among the replies (its command did not run), and a MOVED
  /// makes the router learn the slot map again, so the next group goes to the right node.
  void execute_group(std::string_view key, std::string commands, std::size_t count,
                     RedisConnection::GroupHandler handler);

 private:
  enum class Mode { kUnknown, kStandalone, kCluster };
  struct Node {
    ClusterNode address;
    std::shared_ptr<RedisConnection> connection;
  };
  static constexpr std::uint16_t kNoNode = 0xFFFF;

  /// A started connection to one node, reporting to this router.
  std::shared_ptr<RedisConnection> make_connection(const std::string& host, std::uint16_t port);
  void detect();
  void retry_detect();
  void on_connection_ready();
  Node& node(const ClusterNode& address);
  void apply(const std::vector<SlotRange>& ranges, const std::string& seen_through);
  void refresh();
  void send(Node& target, std::uint16_t slot, std::string command, Handler handler,
            unsigned redirects, bool asking);

  boost::asio::io_context& ioc_;
  Options options_;
  const core::Clock& clock_;
  core::Random& random_;
  std::shared_ptr<spdlog::logger> log_;

  boost::asio::steady_timer detect_timer_;  ///< retries CLUSTER SLOTS after a timeout
  Mode mode_ = Mode::kUnknown;
  bool closed_ = false;
  std::shared_ptr<RedisConnection> seed_;
  std::vector<std::unique_ptr<Node>> nodes_;  ///< every master seen (never shrinks)
  std::map<std::string, std::uint16_t, std::less<>> node_index_;
  std::vector<std::uint16_t> slots_;  ///< slot -> index into nodes_, or kNoNode
  bool refresh_in_flight_ = false;
  core::TimePoint last_refresh_{};
};

}  // namespace sluice::store
