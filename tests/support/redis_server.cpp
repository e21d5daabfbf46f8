// SPDX-License-Identifier: Apache-2.0
#include "tests/support/redis_server.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <csignal>
#include <stdexcept>

#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

std::uint16_t free_port() {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

std::string render(const redisReply& reply) {
  switch (reply.type) {
    case REDIS_REPLY_INTEGER:
      return std::to_string(reply.integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (std::size_t i = 0; i < reply.elements; ++i) {
        out += (i == 0 ? "" : ",") + render(*reply.element[i]);  // NOLINT(*-pointer-arithmetic)
      }
      return out;
    }
    default:
      return std::string(reply.str, reply.len);
  }
}

bool lost_a_bind_race(const std::string& output) {
  return output.find("Address already in use") != std::string::npos;
}

bool wants_a_cluster_bus(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--cluster-enabled") != args.end();
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra_args) : extra_args_(std::move(extra_args)) {
  // A port that was free when free_port() closed its acceptor can be taken before redis-server
  // binds it (another test's outgoing connection picks ports from the same ephemeral range); a
  // cluster node also binds a second port, the cluster bus, which Redis would otherwise put at
  // port + 10000 without asking whether that one is free. Both are chosen here, and a start that
  // lost the race is tried again on new ports.
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    port_ = free_port();
    cluster_bus_port_ = wants_a_cluster_bus(extra_args_) ? free_port() : 0;
    try {
      start();
      return;
    } catch (const std::runtime_error& error) {
      if (attempt == kAttempts || !lost_a_bind_race(error.what())) {
        throw;
      }
    }
  }
}

RedisServer::~RedisServer() {
  stop();
}

void RedisServer::start() {
  if (process_) {
    return;
  }
  std::vector<std::string> argv{SLUICE_REDIS_SERVER,
                                "--bind",
                                "127.0.0.1",
                                "--port",
                                std::to_string(port_),
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--enable-debug-command",
                                "yes",
                                "--loglevel",
                                "notice"};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  if (cluster_bus_port_ != 0) {
    argv.insert(argv.end(), {"--cluster-port", std::to_string(cluster_bus_port_)});
  }
  process_ = std::make_unique<ChildProcess>(std::move(argv));
  if (!process_->wait_for_line("Ready to accept connections", kDefaultTimeout)) {
    const std::string output = process_->output();
    process_.reset();
    throw std::runtime_error("redis-server did not start on port " + std::to_string(port_) + ":\n" +
                             output);
  }
}

void RedisServer::stop() {
  if (process_) {
    process_->send_signal(SIGKILL);
    process_->wait_exit();
    process_.reset();
  }
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  const timeval timeout{5, 0};
  redisContext* context = redisConnectWithTimeout("127.0.0.1", port_, timeout);
  if (context == nullptr || context->err != 0) {
    const std::string error = context != nullptr ? context->errstr : "out of memory";
    redisFree(context);
    throw std::runtime_error("cannot connect to redis on port " + std::to_string(port_) + ": " +
                             error);
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& arg : args) {
    argv.push_back(arg.c_str());
    lengths.push_back(arg.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(args.size()), argv.data(), lengths.data()));
  if (reply == nullptr) {
    const std::string error = context->errstr;
    redisFree(context);
    throw std::runtime_error("redis command failed: " + error);
  }
  std::string text = render(*reply);
  freeReplyObject(reply);
  redisFree(context);
  return text;
}

std::int64_t RedisServer::time_ms() const {
  const std::string time = command({"TIME"});  // "SECONDS,MICROSECONDS"
  const auto comma = time.find(',');
  if (comma == std::string::npos) {
    throw std::runtime_error("unexpected reply to TIME: " + time);
  }
  return std::stoll(time.substr(0, comma)) * 1000 + std::stoll(time.substr(comma + 1)) / 1000;
}

bool RedisServer::answers_within(std::chrono::milliseconds timeout) const {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  const timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
  redisContext* context = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (context == nullptr || context->err != 0 || redisSetTimeout(context, tv) != REDIS_OK) {
    redisFree(context);
    return false;
  }
  auto* reply = static_cast<redisReply*>(redisCommand(context, "PING"));
  const bool answered = reply != nullptr;
  freeReplyObject(reply);
  redisFree(context);
  return answered;
}

::testing::AssertionResult wait_for_redis_clock(const RedisServer& redis,
                                                std::int64_t at_least_ms) {
  const std::int64_t ahead = std::max<std::int64_t>(0, at_least_ms - redis.time_ms());
  return wait_until(
      "Redis' clock (TIME) to read " + std::to_string(at_least_ms) + " ms",
      [&] { return redis.time_ms() >= at_least_ms; },
      kDefaultTimeout + std::chrono::milliseconds(ahead), std::chrono::milliseconds(5));
}

}  // namespace sluice::testing
