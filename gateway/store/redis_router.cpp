// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_router.hpp"

#include <algorithm>
#include <utility>

namespace sluice::store {

RedisRouter::RedisRouter(boost::asio::io_context& ioc, Options options, const core::Clock& clock,
                         core::Random& random, std::shared_ptr<spdlog::logger> log)
    : ioc_(ioc),
      options_(std::move(options)),
      clock_(clock),
      random_(random),
      log_(std::move(log)),
      detect_timer_(ioc) {}

void RedisRouter::start() {
  seed_ = make_connection(options_.connection.host, options_.connection.port);
}

std::shared_ptr<RedisConnection> RedisRouter::make_connection(const std::string& host,
                                                              std::uint16_t port) {
  RedisConnection::Options o = options_.connection;
  o.host = host;
  o.port = port;
  // The router outlives its connections' callbacks: close() closes them all first.
  o.on_ready = [this](const std::vector<RedisReply>& /*setup*/) { on_connection_ready(); };
  o.on_down = [this](const std::string& /*why*/) { refresh(); };
  auto connection = std::make_shared<RedisConnection>(ioc_, std::move(o), clock_, random_, log_);
  connection->start();
  return connection;
}

void RedisRouter::close() {
  closed_ = true;
  detect_timer_.cancel();
  if (seed_) {
    seed_->close();
  }
  for (auto& n : nodes_) {
    n->connection->close();
  }
}

bool RedisRouter::ready() const noexcept {
  switch (mode_) {
    case Mode::kStandalone:
      return seed_->ready();
    case Mode::kCluster:
      return true;
    case Mode::kUnknown:
      break;
  }
  return false;
}

std::size_t RedisRouter::nodes() const noexcept {
  return mode_ == Mode::kCluster ? nodes_.size() : 1;
}

void RedisRouter::on_connection_ready() {
  if (closed_) {
    return;
  }
  if (mode_ == Mode::kUnknown) {
    detect();
    return;
  }
  if (options_.on_ready) {
    options_.on_ready();
  }
}

void RedisRouter::detect() {
  seed_->execute(
      format_command({"CLUSTER", "SLOTS"}), [self = shared_from_this()](RedisOutcome outcome) {
        if (self->closed_ || self->mode_ != Mode::kUnknown) {
          return;
        }
        if (outcome.status == RedisStatus::kUnavailable) {
          return;  // the seed reconnects, and asks again when it is ready
        }
        if (outcome.status == RedisStatus::kTimeout) {
          self->retry_detect();
          return;
        }
        const auto& host = self->options_.connection.host;
        const auto port = self->options_.connection.port;
        auto ranges = outcome.reply.is_error() ? std::nullopt : parse_cluster_slots(outcome.reply);
        if (!ranges || ranges->empty()) {
          // "ERR This instance has cluster support disabled", or a proxy that hides the cluster.
          self->mode_ = Mode::kStandalone;
          self->log_->debug("redis at {}:{} is standalone", host, port);
        } else {
          self->mode_ = Mode::kCluster;
          self->slots_.assign(kClusterSlots, kNoNode);
          self->apply(*ranges, host);
          self->log_->debug("redis at {}:{} is a cluster of {} masters", host, port,
                            self->nodes_.size());
        }
        if (self->options_.on_ready) {
          self->options_.on_ready();
        }
      });
}

void RedisRouter::retry_detect() {
  detect_timer_.expires_after(options_.refresh_interval);
  detect_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->closed_ && self->mode_ == Mode::kUnknown && self->seed_->ready()) {
      self->detect();
    }
  });
}

RedisRouter::Node& RedisRouter::node(const ClusterNode& address) {
  const std::string name = address.name();
  if (const auto it = node_index_.find(name); it != node_index_.end()) {
    return *nodes_[it->second];
  }
  auto created = std::make_unique<Node>();
  created->address = address;
  const auto& seed = options_.connection;
  if (address.host == seed.host && address.port == seed.port) {
    created->connection = seed_;  // the seed is one of the masters: no second connection
  } else {
    created->connection = make_connection(address.host, address.port);
  }
  node_index_.emplace(name, static_cast<std::uint16_t>(nodes_.size()));
  nodes_.push_back(std::move(created));
  return *nodes_.back();
}

void RedisRouter::apply(const std::vector<SlotRange>& ranges, const std::string& seen_through) {
  std::vector<std::uint16_t> slots(kClusterSlots, kNoNode);
  for (const SlotRange& range : ranges) {
    ClusterNode address = range.master;
    if (address.host.empty() || address.host == "?") {
      address.host = seen_through;  // "the address you asked"
    }
    node(address);
    const std::uint16_t index = node_index_.find(address.name())->second;
    std::fill(slots.begin() + range.first, slots.begin() + range.last + 1, index);
  }
  if (slots != slots_) {
    const auto unserved = std::count(slots.begin(), slots.end(), kNoNode);
    log_->info("redis cluster slot map: {} masters known, {} of {} slots unserved", nodes_.size(),
               unserved, kClusterSlots);
    slots_ = std::move(slots);
  }
}

void RedisRouter::refresh() {
  if (closed_ || mode_ != Mode::kCluster || refresh_in_flight_) {
    return;
  }
  const core::TimePoint now = clock_.now();
  if (last_refresh_ != core::TimePoint{} && now - last_refresh_ < options_.refresh_interval) {
    return;
  }
  // Any master that answers knows the whole map; the seed is the last resort.
  RedisConnection* via = nullptr;
  std::string via_host;
  for (const auto& n : nodes_) {
    if (n->connection->ready()) {
      via = n->connection.get();
      via_host = n->address.host;
      break;
    }
  }
  if (via == nullptr && seed_->ready()) {
    via = seed_.get();
    via_host = options_.connection.host;
  }
  if (via == nullptr) {
    return;  // a connection that comes back calls on_down/on_ready paths that ask again
  }
  refresh_in_flight_ = true;
  last_refresh_ = now;
  via->execute(format_command({"CLUSTER", "SLOTS"}), [self = shared_from_this(),
                                                      via_host](RedisOutcome outcome) {
    self->refresh_in_flight_ = false;
    if (self->closed_ || outcome.status != RedisStatus::kOk || outcome.reply.is_error()) {
      return;
    }
    if (auto ranges = parse_cluster_slots(outcome.reply); ranges && !ranges->empty()) {
      self->apply(*ranges, via_host);
    }
  });
}

void RedisRouter::execute(std::string_view key, std::string command, Handler handler) {
  if (mode_ == Mode::kStandalone) {
    seed_->execute(command, std::move(handler));
    return;
  }
  if (mode_ == Mode::kUnknown || closed_) {
    handler(RedisOutcome{RedisStatus::kUnavailable, {}});
    return;
  }
  const std::uint16_t slot = cluster_slot(key);
  const std::uint16_t index = slots_[slot];
  if (index == kNoNode) {
    refresh();
    handler(RedisOutcome{RedisStatus::kUnavailable, {}});
    return;
  }
  send(*nodes_[index], slot, std::move(command), std::move(handler), 0, /*asking=*/false);
}

void RedisRouter::execute_group(std::string_view key, std::string commands, std::size_t count,
                                RedisConnection::GroupHandler handler) {
  if (mode_ == Mode::kStandalone) {
    seed_->execute_group(std::move(commands), count, std::move(handler));
    return;
  }
  if (mode_ == Mode::kUnknown || closed_) {
    handler(RedisStatus::kUnavailable, {});
    return;
  }
  const std::uint16_t index = slots_[cluster_slot(key)];
  if (index == kNoNode) {
    refresh();
    handler(RedisStatus::kUnavailable, {});
    return;
  }
  nodes_[index]->connection->execute_group(
      std::move(commands), count,
      [self = shared_from_this(), handler = std::move(handler)](RedisStatus status,
                                                                std::vector<RedisReply> replies) {
        const bool moved = std::any_of(replies.begin(), replies.end(), [](const RedisReply& r) {
          const auto redirect = r.is_error() ? parse_redirect(r.text) : std::nullopt;
          return redirect && redirect->kind == Redirect::Kind::kMoved;
        });
        if ((moved || status == RedisStatus::kUnavailable) && !self->closed_) {
          self->refresh();  // a reshard or a failover: learn the slot map again
        }
        handler(status, std::move(replies));
      });
}

void RedisRouter::send(Node& target, std::uint16_t slot, std::string command, Handler handler,
                       unsigned redirects, bool asking) {
  if (asking) {
    // ASKING holds for the next command on this connection only: the two leave together.
    target.connection->execute(format_command({"ASKING"}), [](const RedisOutcome&) {});
  }
  const std::string& bytes = command;
  target.connection->execute(
      bytes, [self = shared_from_this(), slot, command, handler = std::move(handler), redirects,
              via_host = target.address.host](RedisOutcome outcome) mutable {
        if (outcome.status == RedisStatus::kOk && outcome.reply.is_error() && !self->closed_) {
          auto redirect = parse_redirect(outcome.reply.text);
          if (redirect && redirects < self->options_.max_redirects) {
            if (redirect->node.host.empty() || redirect->node.host == "?") {
              redirect->node.host = via_host;
            }
            Node& next = self->node(redirect->node);
            if (redirect->kind == Redirect::Kind::kMoved) {
              self->slots_[redirect->slot] = self->node_index_.find(next.address.name())->second;
              self->refresh();  // one moved slot often means a reshard: learn the rest
            }
            self->send(next, slot, std::move(command), std::move(handler), redirects + 1,
                       redirect->kind == Redirect::Kind::kAsk);
            return;
          }
        }
        if (outcome.status == RedisStatus::kUnavailable) {
          self->refresh();  // the master may have failed over
        }
        handler(std::move(outcome));
      });
}

}  // namespace sluice::store
