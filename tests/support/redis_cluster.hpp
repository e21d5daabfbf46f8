// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/redis_server.hpp"

namespace sluice::testing {

/// A real Redis Cluster for tests: `masters` redis-servers (RedisServer, each with cluster mode
/// on and its own directory for nodes.conf), the 16384 slots split evenly between them in order,
/// every pair joined with CLUSTER MEET. The constructor returns once every node reports
/// cluster_state:ok and knows every other one, and throws std::runtime_error otherwise. No
/// replicas.
///
/// Thread-safety: confined to the test's thread (node(i).command() opens its own connection).
class RedisCluster {
 public:
  explicit RedisCluster(std::size_t masters = 3);
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] RedisServer& node(std::size_t i) { return *nodes_.at(i); }
  [[nodiscard]] std::string id(std::size_t i) const { return ids_.at(i); }
  /// The index of the node that serves `slot` now (asks node 0).
  [[nodiscard]] std::size_t owner(std::uint16_t slot);
  /// Keys matching `pattern` on node i (KEYS; test data only).
  [[nodiscard]] std::vector<std::string> keys(std::size_t i, const std::string& pattern);

  /// The first half of a live reshard of `slot` from node `from` to node `to`, as
  /// `redis-cli --cluster reshard` does it: IMPORTING on `to`, MIGRATING on `from`, and every key
  /// of the slot MIGRATEd. From now on `from` answers ASK for the slot's keys.
  void begin_migration(std::uint16_t slot, std::size_t from, std::size_t to);
  /// The second half: the slot belongs to `to` on every node (the others answer MOVED).
  void finish_migration(std::uint16_t slot, std::size_t to);

 private:
  void meet(std::size_t from, std::size_t to);
  void wait_until_stable();
  /// Whether every node's config epoch differs from the others' and all nodes agree on them.
  bool epochs_settled();

  std::vector<std::filesystem::path> dirs_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::string> ids_;
};

}  // namespace sluice::testing
