// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/store/redis_protocol.hpp"

namespace sluice::store {

/// How one Redis command ended.
enum class RedisStatus {
  kOk,           ///< a reply arrived (it may be a Redis error reply)
  kTimeout,      ///< no reply within the command timeout (a late reply is discarded)
  kUnavailable,  ///< not connected, or the connection failed before the reply
};

struct RedisOutcome {
  RedisStatus status = RedisStatus::kUnavailable;
  RedisReply reply;  ///< meaningful for kOk
};

/// One pipelined connection to Redis on one io_context: any number of commands in flight,
/// replies matched to commands in order (RESP guarantees order on a connection). Each command
/// gets `timeout`; a command that times out is answered kTimeout at once and its reply, when it
/// comes, is skipped. Connects (and reconnects after any failure) by itself with capped
/// exponential backoff and full jitter, and runs `setup` commands (AUTH, SCRIPT LOAD, ...) before
/// it takes commands. While it is not ready, commands are answered kUnavailable at once, so no
/// caller ever waits on a dead Redis.
///
/// Confined to the thread running its io_context: every member function, and every handler it
/// calls, runs there. Held by shared_ptr (its handlers keep it alive); close() stops it. The
/// clock, the random source and the logger outlive it.
class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
 public:
  using Handler = std::function<void(RedisOutcome)>;

  struct Options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;
    std::chrono::milliseconds timeout{50};            ///< per command
    std::chrono::milliseconds connect_timeout{1000};  ///< resolve + connect + setup
    std::chrono::milliseconds backoff_initial{50};
    std::chrono::milliseconds backoff_max{5000};
    /// Commands sent after connecting, in order; a Redis error reply to any of them fails the
    /// connection attempt. Their replies go to on_ready.
    std::function<std::vector<std::string>()> setup;
    /// Called when the connection becomes ready, with the replies to `setup`.
    std::function<void(const std::vector<RedisReply>&)> on_ready;
    /// Called when a ready connection fails (`why` says how); not for failed attempts.
    std::function<void(const std::string& why)> on_down;
  };

  RedisConnection(boost::asio::io_context& ioc, Options options, const core::Clock& clock,
                  core::Random& random, std::shared_ptr<spdlog::logger> log);

  /// Starts connecting (call once).
  void start();
  /// Closes the connection for good; pending commands are answered kUnavailable.
  void close();
  [[nodiscard]] bool ready() const noexcept { return state_ == State::kReady; }

  /// Sends `command` (RESP bytes, see format_command) and calls `handler` exactly once: with the
  /// reply, on timeout, or at once (inside this call) with kUnavailable when not ready.
  void execute(const std::string& command, Handler handler);
  /// How a group of commands ended (execute_group): kOk with one reply per command, in order,
  /// or kTimeout / kUnavailable with none.
  using GroupHandler = std::function<void(RedisStatus, std::vector<RedisReply>)>;
  /// Sends `count` commands, their RESP bytes concatenated in `commands`, pipelined as one
  /// group with one deadline, and calls `handler` exactly once, as execute() does for one
  /// command: one pending entry and one handler for the whole group.
  void execute_group(std::string commands, std::size_t count, GroupHandler handler);
  /// Commands in flight (sent or queued, not yet answered by Redis).
  [[nodiscard]] std::size_t in_flight() const noexcept { return pending_.size(); }

 private:
  enum class State { kIdle, kConnecting, kSetup, kReady, kClosed };
  struct Pending {
    Handler handler;  ///< empty once answered (by a timeout)
    core::TimePoint deadline;
    GroupHandler group;               ///< instead of `handler` for a group; empty once answered
    std::size_t remaining = 1;        ///< replies still to come (a timed-out group's are skipped)
    std::vector<RedisReply> replies;  ///< a group's replies so far
    [[nodiscard]] bool waiting() const noexcept { return handler || group; }
  };

  void connect();
  void on_connected();
  void send(const std::string& command, Handler handler, core::TimePoint deadline);
  /// Queues `bytes` for the next write and `pending` for their replies.
  void enqueue(const std::string& bytes, Pending pending);
  /// The same for bytes that are not needed any more: taken, not copied, when nothing waits.
  void enqueue(std::string&& bytes, Pending pending);
  /// Queues `pending` for the reply to bytes just added to the outbox, and schedules the write.
  void wait_for(Pending pending);
  void write_some();
  void read_some();
  void on_reply(RedisReply reply);
  void arm_timer();
  void on_timer();
  /// Drops the connection, answers every pending command kUnavailable, and (unless closing)
  /// schedules the next attempt.
  void fail(const std::string& why, bool reconnect = true);
  void schedule_reconnect();

  boost::asio::io_context& ioc_;
  Options options_;
  const core::Clock& clock_;
  core::Random& random_;
  std::shared_ptr<spdlog::logger> log_;

  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;      ///< command deadlines, connect deadline
  boost::asio::steady_timer reconnect_;  ///< backoff
  State state_ = State::kIdle;
  std::uint64_t generation_ = 0;  ///< bumped per connection attempt: stale handlers bail out
  unsigned attempt_ = 0;          ///< failed attempts in a row (backoff exponent)
  bool logged_down_ = false;      ///< the first failed attempt in a row was logged at warn

  ReplyReader reader_;
  std::deque<Pending> pending_;
  std::string outbox_;   ///< commands waiting for the write in flight to finish
  std::string writing_;  ///< the bytes of the write in flight
  bool write_in_flight_ = false;
  bool flush_posted_ = false;  ///< a write_some() is posted for this turn's commands
  std::array<char, 16384> read_buffer_{};
  std::vector<RedisReply> setup_replies_;
};

}  // namespace sluice::store
