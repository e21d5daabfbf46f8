// SPDX-License-Identifier: Apache-2.0
#include "tests/support/redis_cluster.hpp"

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {
namespace {

std::filesystem::path make_directory() {
  std::random_device seed;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sluice-redis-cluster-" + std::to_string(seed()) + std::to_string(seed()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) {
    if (!part.empty()) {
      parts.push_back(part);
    }
  }
  return parts;
}

/// Each node's config epoch as one node's CLUSTER NODES names them (id -> epoch), and which of
/// the ids is the node itself.
struct EpochView {
  std::map<std::string, std::string> epochs;
  std::string myself;
};

EpochView epoch_view(const std::string& cluster_nodes) {
  EpochView view;
  std::stringstream lines(cluster_nodes);
  std::string line;
  while (std::getline(lines, line)) {
    std::stringstream fields(line);
    std::vector<std::string> f;
    std::string field;
    while (f.size() < 7 && fields >> field) {
      f.push_back(field);
    }
    if (f.size() < 7) {
      continue;
    }
    view.epochs[f[0]] = f[6];
    if (f[2].find("myself") != std::string::npos) {
      view.myself = f[0];
    }
  }
  return view;
}

}  // namespace

RedisCluster::RedisCluster(std::size_t masters) {
  if (masters == 0 || masters > 16) {
    throw std::invalid_argument("RedisCluster: 1 to 16 masters");
  }
  for (std::size_t i = 0; i < masters; ++i) {
    dirs_.push_back(make_directory());
    nodes_.push_back(std::make_unique<RedisServer>(std::vector<std::string>{
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
        "5000", "--dir", dirs_.back().string()}));
    ids_.push_back(nodes_.back()->command({"CLUSTER", "MYID"}));
  }
  const std::size_t per_node = 16384 / masters;
  for (std::size_t i = 0; i < masters; ++i) {
    const std::size_t first = i * per_node;
    const std::size_t last = i + 1 == masters ? 16383 : first + per_node - 1;
    const std::string reply = nodes_[i]->command(
        {"CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)});
    if (reply != "OK") {
      throw std::runtime_error("CLUSTER ADDSLOTSRANGE: " + reply);
    }
  }
  // Every pair meets directly rather than node 0 meeting the rest and gossip introducing them to
  // each other: one CI run saw a node still knowing only two of three after 10 s.
  for (std::size_t i = 0; i < masters; ++i) {
    for (std::size_t j = i + 1; j < masters; ++j) {
      meet(i, j);
    }
  }
  wait_until_stable();
}

RedisCluster::~RedisCluster() {
  nodes_.clear();
  for (const auto& dir : dirs_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
}

void RedisCluster::meet(std::size_t from, std::size_t to) {
  const std::string reply =
      nodes_[from]->command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[to]->port()),
                             std::to_string(nodes_[to]->cluster_bus_port())});
  if (reply != "OK") {
    throw std::runtime_error("CLUSTER MEET: " + reply);
  }
}

void RedisCluster::wait_until_stable() {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + kDefaultTimeout * 2;
  auto next_meet = start + std::chrono::seconds(2);
  const std::string known = "cluster_known_nodes:" + std::to_string(nodes_.size()) + "\r";
  std::vector<std::string> info(nodes_.size());
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<std::size_t> lonely;
    bool stable = true;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      info[i] = nodes_[i]->command({"CLUSTER", "INFO"});
      const bool knows_all = info[i].find(known) != std::string::npos;
      if (!knows_all) {
        lonely.push_back(i);
      }
      stable = stable && knows_all && info[i].find("cluster_state:ok") != std::string::npos;
    }
    // Masters whose slots were added by hand start at config epoch 0 and tell their collisions
    // apart by gossip, bumping one of each pair. A slot moved while two still collide can be
    // claimed back by the one bumped later, and its keys deleted where they had moved
    // (finish_migration): so the cluster is stable once every node's epoch is its own and every
    // node sees the same epochs.
    if (stable && !epochs_settled()) {
      stable = false;
    }
    if (stable) {
      return;
    }
    // A handshake that timed out is not retried by Redis until gossip names the node again;
    // introduce a node that still misses peers to every other node once more.
    if (std::chrono::steady_clock::now() >= next_meet) {
      for (const std::size_t i : lonely) {
        for (std::size_t j = 0; j < nodes_.size(); ++j) {
          if (j != i) {
            meet(i, j);
          }
        }
      }
      next_meet = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string report;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    report += "node " + std::to_string(i) + " (port " + std::to_string(nodes_[i]->port()) +
              ", bus " + std::to_string(nodes_[i]->cluster_bus_port()) + "):\n" + info[i] +
              nodes_[i]->command({"CLUSTER", "NODES"}) + "\n";
  }
  throw std::runtime_error("the redis cluster never became stable:\n" + report);
}

bool RedisCluster::epochs_settled() {
  std::vector<EpochView> views;
  std::map<std::string, std::string> own;
  std::set<std::string> distinct;
  for (const auto& node : nodes_) {
    views.push_back(epoch_view(node->command({"CLUSTER", "NODES"})));
    const EpochView& view = views.back();
    const auto mine = view.epochs.find(view.myself);
    if (mine == view.epochs.end()) {
      return false;
    }
    own[view.myself] = mine->second;
    distinct.insert(mine->second);
  }
  if (distinct.size() != nodes_.size()) {
    return false;
  }
  for (const EpochView& view : views) {
    if (view.epochs != own) {
      return false;
    }
  }
  return true;
}

std::size_t RedisCluster::owner(std::uint16_t slot) {
  // CLUSTER SLOTS, flattened by RedisServer::command: first,last,host,port,id,...
  const auto fields = split(nodes_[0]->command({"CLUSTER", "SLOTS"}), ',');
  for (std::size_t i = 0; i + 4 < fields.size(); ++i) {
    const auto parse = [](const std::string& s) -> long {
      try {
        return std::stol(s);
      } catch (const std::exception&) {
        return -1;
      }
    };
    const long first = parse(fields[i]);
    const long last = parse(fields[i + 1]);
    if (first >= 0 && last >= first && fields[i + 2] == "127.0.0.1" && first <= slot &&
        slot <= last) {
      const long port = parse(fields[i + 3]);
      for (std::size_t n = 0; n < nodes_.size(); ++n) {
        if (nodes_[n]->port() == port) {
          return n;
        }
      }
    }
  }
  throw std::runtime_error("no node serves slot " + std::to_string(slot));
}

std::vector<std::string> RedisCluster::keys(std::size_t i, const std::string& pattern) {
  return split(nodes_.at(i)->command({"KEYS", pattern}), ',');
}

void RedisCluster::begin_migration(std::uint16_t slot, std::size_t from, std::size_t to) {
  const std::string s = std::to_string(slot);
  const auto expect_ok = [](const std::string& what, const std::string& reply) {
    if (reply != "OK" && reply != "NOKEY") {
      throw std::runtime_error(what + ": " + reply);
    }
  };
  expect_ok("IMPORTING", nodes_[to]->command({"CLUSTER", "SETSLOT", s, "IMPORTING", ids_[from]}));
  expect_ok("MIGRATING", nodes_[from]->command({"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to]}));
  const auto keys = split(nodes_[from]->command({"CLUSTER", "GETKEYSINSLOT", s, "1000"}), ',');
  for (const auto& key : keys) {
    expect_ok("MIGRATE " + key,
              nodes_[from]->command(
                  {"MIGRATE", "127.0.0.1", std::to_string(nodes_[to]->port()), key, "0", "5000"}));
  }
}

void RedisCluster::finish_migration(std::uint16_t slot, std::size_t to) {
  // The new owner first (it bumps its config epoch), then the rest, as the reshard tool does.
  std::vector<std::size_t> order{to};
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i != to) {
      order.push_back(i);
    }
  }
  for (const std::size_t i : order) {
    const std::string reply =
        nodes_[i]->command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", ids_[to]});
    if (reply != "OK") {
      throw std::runtime_error("SETSLOT NODE: " + reply);
    }
  }
}

}  // namespace sluice::testing
