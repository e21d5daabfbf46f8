// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <random>

#include "gateway/proxy/server_session.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kFreeBuffersKept = 64;
constexpr core::Duration kPooledIdleTime = 30s;  // idle upstream connections older than this close
constexpr core::Duration kMaintenanceEvery = 5s;
constexpr core::Duration kGateRecheck = 1s;  // safety net behind the gate's wake-ups

}  // namespace

BodyBuffer::BodyBuffer(std::vector<std::unique_ptr<char[]>>& free_list)  // NOLINT
    : free_list_(free_list) {
  if (free_list_.empty()) {
    data_ = std::make_unique_for_overwrite<char[]>(kSize);  // NOLINT(modernize-avoid-c-arrays)
  } else {
    data_ = std::move(free_list_.back());
    free_list_.pop_back();
  }
}

BodyBuffer::~BodyBuffer() {
  if (free_list_.size() < kFreeBuffersKept) {
    free_list_.push_back(std::move(data_));
  }
}

Worker::Worker(Services& services, std::size_t index)
    : services_(services), index_(index), pool_(services.clock, kPooledIdleTime) {
  std::random_device device;
  cursor_.random_state = (std::uint64_t{device()} << 32U) | device();
  cursor_.next = index;  // workers start their round robin at different endpoints
  services_.gate.on_slot_freed([this] { net::post(ioc_, [this] { wake_.cancel(); }); });
}

std::shared_ptr<const ThreadView> Worker::view() {
  const std::uint64_t generation = services_.snapshots.generation();
  if (generation != view_generation_) {
    view_ = std::make_shared<const ThreadView>(ThreadView{services_.snapshots.load()});
    view_generation_ = generation;
  }
  return view_;
}

void Worker::start_accepting(tcp::acceptor acceptor) {
  acceptor_.emplace(std::move(acceptor));
  auto log = services_.log;
  const auto on_exit = [log](const std::exception_ptr& e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        log->error("worker loop failed error={}", ex.what());
      }
    }
  };
  net::co_spawn(ioc_, accept_loop(), on_exit);
  net::co_spawn(ioc_, maintenance_loop(), on_exit);
}

net::awaitable<void> Worker::accept_loop() {
  auto log = services_.log;
  for (;;) {
    while (!services_.gate.try_reserve()) {
      // At max_connections: leave new connections in the kernel backlog until a slot frees.
      if (!acceptor_ || !acceptor_->is_open()) {
        co_return;
      }
      wake_.expires_after(kGateRecheck);
      co_await wake_.async_wait(kAsTuple);
    }
    ConnectionSlot slot(services_.gate);
    if (!acceptor_ || !acceptor_->is_open()) {
      co_return;
    }
    auto [ec, socket] = co_await acceptor_->async_accept(kAsTuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_->is_open()) {
        co_return;
      }
      log->warn("accept failed worker={} error={}", index_, ec.message());
      wake_.expires_after(100ms);  // e.g. out of file descriptors: do not spin
      co_await wake_.async_wait(kAsTuple);
      continue;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    slot.accepted();
    net::co_spawn(ioc_, run_session(*this, std::move(socket), std::move(slot)),
                  [log](const std::exception_ptr& e) {
                    if (e) {
                      try {
                        std::rethrow_exception(e);
                      } catch (const std::exception& ex) {
                        log->error("session failed error={}", ex.what());
                      }
                    }
                  });
  }
}

net::awaitable<void> Worker::maintenance_loop() {
  for (;;) {
    maintenance_.expires_after(kMaintenanceEvery);
    auto [ec] = co_await maintenance_.async_wait(kAsTuple);
    if (ec) {
      co_return;
    }
    sweep_pool();
  }
}

void Worker::stop_accepting() {
  if (acceptor_) {
    beast::error_code ignored;
    acceptor_->close(ignored);
  }
  wake_.cancel();
}

void Worker::close_idle_sessions() {
  for (SessionEntry* entry : sessions_) {
    if (entry->idle) {
      entry->stream->cancel();
    }
  }
}

std::size_t Worker::close_all_sessions() {
  const std::size_t count = sessions_.size();
  for (SessionEntry* entry : sessions_) {
    beast::error_code ignored;
    entry->stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    entry->stream->socket().close(ignored);
  }
  maintenance_.cancel();
  pool_.clear();
  return count;
}

void Worker::sweep_pool() {
  const auto snapshot = view()->snapshot;
  pool_.sweep([&](std::string_view endpoint) {
    for (std::size_t b = 0; b < snapshot->backend_count(); ++b) {
      for (const auto& e : snapshot->backend(b).endpoints()) {
        if (e.label == endpoint) {
          return true;
        }
      }
    }
    return false;
  });
}

}  // namespace sluice::proxy
