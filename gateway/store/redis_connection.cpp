// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_connection.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <utility>

namespace sluice::store {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

constexpr unsigned kMaxBackoffExponent = 16;

}  // namespace

RedisConnection::RedisConnection(net::io_context& ioc, Options options, const core::Clock& clock,
                                 core::Random& random, std::shared_ptr<spdlog::logger> log)
    : ioc_(ioc),
      options_(std::move(options)),
      clock_(clock),
      random_(random),
      log_(std::move(log)),
      resolver_(ioc),
      socket_(ioc),
      timer_(ioc),
      reconnect_(ioc) {}

void RedisConnection::start() {
  connect();
}

void RedisConnection::close() {
  fail("closed", /*reconnect=*/false);
  state_ = State::kClosed;
  reconnect_.cancel();
}

void RedisConnection::execute(const std::string& command, Handler handler) {
  if (state_ != State::kReady) {
    handler(RedisOutcome{RedisStatus::kUnavailable, {}});
    return;
  }
  send(command, std::move(handler), clock_.now() + options_.timeout);
}

void RedisConnection::execute_group(std::string commands, std::size_t count, GroupHandler handler) {
  if (state_ != State::kReady || count == 0) {
    handler(state_ != State::kReady ? RedisStatus::kUnavailable : RedisStatus::kOk, {});
    return;
  }
  Pending pending{.handler = nullptr,
                  .deadline = clock_.now() + options_.timeout,
                  .group = std::move(handler),
                  .remaining = count,
                  .replies = {}};
  pending.replies.reserve(count);
  enqueue(std::move(commands), std::move(pending));
}

void RedisConnection::connect() {
  state_ = State::kConnecting;
  const std::uint64_t generation = ++generation_;
  reader_.reset();
  timer_.expires_after(options_.connect_timeout);
  timer_.async_wait([self = shared_from_this(), generation](const boost::system::error_code& ec) {
    if (!ec && generation == self->generation_ && self->state_ != State::kReady) {
      self->fail("connect timed out after " +
                 std::to_string(self->options_.connect_timeout.count()) + " ms");
    }
  });
  resolver_.async_resolve(
      options_.host, std::to_string(options_.port),
      [self = shared_from_this(), generation](const boost::system::error_code& ec,
                                              const tcp::resolver::results_type& results) {
        if (generation != self->generation_) {
          return;
        }
        if (ec) {
          self->fail("cannot resolve " + self->options_.host + ": " + ec.message());
          return;
        }
        net::async_connect(self->socket_, results,
                           [self, generation](const boost::system::error_code& cec,
                                              const tcp::endpoint& /*endpoint*/) {
                             if (generation != self->generation_) {
                               return;
                             }
                             if (cec) {
                               self->fail("cannot connect: " + cec.message());
                               return;
                             }
                             self->on_connected();
                           });
      });
}

void RedisConnection::on_connected() {
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  state_ = State::kSetup;
  setup_replies_.clear();
  read_some();
  std::vector<std::string> setup = options_.setup ? options_.setup() : std::vector<std::string>{};
  const std::size_t count = setup.size();
  const auto finish = [this] {
    state_ = State::kReady;
    timer_.cancel();
    if (attempt_ > 0) {
      log_->info("redis connected host={} port={} after_failures={}", options_.host, options_.port,
                 attempt_);
    }
    attempt_ = 0;
    logged_down_ = false;
    if (options_.on_ready) {
      options_.on_ready(setup_replies_);
    }
    arm_timer();
  };
  if (count == 0) {
    finish();
    return;
  }
  const core::TimePoint deadline = clock_.now() + options_.connect_timeout;
  for (const auto& command : setup) {
    send(
        command,
        [this, count, finish, generation = generation_](RedisOutcome outcome) {
          if (generation != generation_) {
            return;
          }
          if (outcome.status != RedisStatus::kOk || outcome.reply.is_error()) {
            fail("setup command failed: " + (outcome.status == RedisStatus::kOk
                                                 ? outcome.reply.text
                                                 : std::string("no reply")));
            return;
          }
          setup_replies_.push_back(std::move(outcome.reply));
          if (setup_replies_.size() == count) {
            finish();
          }
        },
        deadline);
  }
}

void RedisConnection::send(const std::string& command, Handler handler, core::TimePoint deadline) {
  enqueue(command, Pending{.handler = std::move(handler),
                           .deadline = deadline,
                           .group = nullptr,
                           .remaining = 1,
                           .replies = {}});
}

void RedisConnection::enqueue(std::string&& bytes, Pending pending) {
  if (outbox_.empty()) {
    // A group's commands (kilobytes) are taken, not copied: the outbox's own buffer, left
    // from an earlier write, goes with `bytes` (docs/benchmarks.md, 2026-12-02).
    outbox_.swap(bytes);
  } else {
    outbox_ += bytes;
  }
  wait_for(std::move(pending));
}

void RedisConnection::enqueue(const std::string& bytes, Pending pending) {
  outbox_ += bytes;
  wait_for(std::move(pending));
}

void RedisConnection::wait_for(Pending pending) {
  const bool was_idle = pending_.empty();
  pending_.push_back(std::move(pending));
  // Cork: commands issued in the same turn of the event loop (one per session that is deciding
  // now) leave in one write, so a busy worker pays one syscall per batch, not per command.
  if (!flush_posted_ && !write_in_flight_) {
    flush_posted_ = true;
    net::post(ioc_, [self = shared_from_this(), generation = generation_] {
      self->flush_posted_ = false;
      if (generation == self->generation_) {
        self->write_some();
      }
    });
  }
  if (was_idle && state_ == State::kReady) {
    arm_timer();  // otherwise a wait for an earlier deadline is already armed
  }
}

void RedisConnection::write_some() {
  if (write_in_flight_ || outbox_.empty()) {
    return;
  }
  writing_.swap(outbox_);
  outbox_.clear();
  write_in_flight_ = true;
  net::async_write(socket_, net::buffer(writing_),
                   [self = shared_from_this(), generation = generation_](
                       const boost::system::error_code& ec, std::size_t /*bytes*/) {
                     if (generation != self->generation_) {
                       return;
                     }
                     self->write_in_flight_ = false;
                     self->writing_.clear();
                     if (ec) {
                       self->fail("write failed: " + ec.message());
                       return;
                     }
                     self->write_some();
                   });
}

void RedisConnection::read_some() {
  socket_.async_read_some(net::buffer(read_buffer_),
                          [self = shared_from_this(), generation = generation_](
                              const boost::system::error_code& ec, std::size_t bytes) {
                            if (generation != self->generation_) {
                              return;
                            }
                            if (ec) {
                              self->fail(ec == net::error::eof ? std::string("closed by redis")
                                                               : "read failed: " + ec.message());
                              return;
                            }
                            self->reader_.feed(std::string_view(self->read_buffer_.data(), bytes));
                            for (;;) {
                              bool protocol_error = false;
                              auto reply = self->reader_.next(protocol_error);
                              if (protocol_error) {
                                self->fail("protocol error");
                                return;
                              }
                              if (!reply) {
                                break;
                              }
                              self->on_reply(std::move(*reply));
                              if (generation != self->generation_) {
                                return;  // a handler closed or failed the connection
                              }
                            }
                            self->read_some();
                          });
}

void RedisConnection::on_reply(RedisReply reply) {
  if (pending_.empty()) {
    fail("a reply nobody asked for");
    return;
  }
  Pending& front = pending_.front();
  if (front.group) {
    front.replies.push_back(std::move(reply));
  }
  if (--front.remaining > 0) {
    return;
  }
  Handler handler = std::move(front.handler);
  GroupHandler group = std::move(front.group);
  std::vector<RedisReply> replies = std::move(front.replies);
  pending_.pop_front();
  if (handler) {
    handler(RedisOutcome{RedisStatus::kOk, std::move(reply)});
  } else if (group) {
    group(RedisStatus::kOk, std::move(replies));
  }
}

void RedisConnection::arm_timer() {
  const auto first =
      std::find_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.waiting(); });
  if (first == pending_.end()) {
    return;
  }
  timer_.expires_at(first->deadline);
  timer_.async_wait(
      [self = shared_from_this(), generation = generation_](const boost::system::error_code& ec) {
        if (!ec && generation == self->generation_) {
          self->on_timer();
        }
      });
}

void RedisConnection::on_timer() {
  const core::TimePoint now = clock_.now();
  std::vector<Handler> expired;
  std::vector<GroupHandler> expired_groups;
  for (Pending& p : pending_) {
    if (!p.waiting()) {
      continue;
    }
    if (p.deadline > now) {
      break;  // deadlines are in send order
    }
    if (p.handler) {
      expired.push_back(std::move(p.handler));
      p.handler = nullptr;
    } else {
      expired_groups.push_back(std::move(p.group));
      p.group = nullptr;
      p.replies.clear();  // the rest of its replies are skipped as they come
    }
  }
  // A Redis that answers nothing for long is as good as gone: reconnect rather than let the
  // queue of answered-by-timeout commands grow.
  const auto stall = std::max<core::Duration>(milliseconds(1000), options_.timeout * 20);
  const bool stalled = !pending_.empty() && pending_.front().deadline + stall <= now;
  const std::uint64_t generation = generation_;
  for (Handler& handler : expired) {
    handler(RedisOutcome{RedisStatus::kTimeout, {}});
  }
  for (GroupHandler& group : expired_groups) {
    group(RedisStatus::kTimeout, {});
  }
  if (generation != generation_) {
    return;
  }
  if (stalled) {
    fail("no reply for " + std::to_string(std::chrono::duration_cast<milliseconds>(stall).count()) +
         " ms");
    return;
  }
  arm_timer();
}

void RedisConnection::fail(const std::string& why, bool reconnect) {
  if (state_ == State::kClosed || state_ == State::kIdle) {
    return;
  }
  const bool was_ready = state_ == State::kReady;
  ++generation_;
  state_ = State::kIdle;
  boost::system::error_code ignored;
  resolver_.cancel();
  socket_.close(ignored);
  timer_.cancel();
  write_in_flight_ = false;
  flush_posted_ = false;
  writing_.clear();
  outbox_.clear();
  std::deque<Pending> failed;
  failed.swap(pending_);
  if (was_ready) {
    log_->warn("redis connection lost host={} port={} error=\"{}\"", options_.host, options_.port,
               why);
  } else if (!logged_down_) {
    log_->warn("redis unreachable host={} port={} error=\"{}\" (retrying with backoff)",
               options_.host, options_.port, why);
    logged_down_ = true;
  } else {
    log_->debug("redis connect attempt failed host={} port={} error=\"{}\"", options_.host,
                options_.port, why);
  }
  for (Pending& p : failed) {
    if (p.handler) {
      p.handler(RedisOutcome{RedisStatus::kUnavailable, {}});
    } else if (p.group) {
      p.group(RedisStatus::kUnavailable, {});
    }
  }
  if (was_ready && options_.on_down) {
    options_.on_down(why);
  }
  if (reconnect) {
    ++attempt_;
    schedule_reconnect();
  }
}

void RedisConnection::schedule_reconnect() {
  // Capped exponential backoff with jitter: half the step fixed, half random, so replicas that
  // lost Redis together do not reconnect in lockstep.
  const unsigned exponent = std::min(attempt_ == 0 ? 0U : attempt_ - 1, kMaxBackoffExponent);
  const auto step =
      std::min<milliseconds>(options_.backoff_max, options_.backoff_initial * (1LL << exponent));
  const auto delay =
      step / 2 + std::chrono::duration_cast<milliseconds>(step / 2 * random_.next_unit());
  reconnect_.expires_after(delay);
  reconnect_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && self->state_ == State::kIdle) {
      self->connect();
    }
  });
}

}  // namespace sluice::store
