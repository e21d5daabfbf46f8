// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/upstream_pool.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace sluice::proxy {
namespace {

constexpr std::size_t kIdleBufferLimit = std::size_t{16} * 1024;

}  // namespace

bool looks_alive(tcp::socket& socket) noexcept {
  if (!socket.is_open()) {
    return false;
  }
  char byte = 0;
  const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  // EAGAIN: open and quiet. 0: the upstream closed. > 0: bytes nobody asked for (a late or
  // unsolicited response): the connection is out of step and must not be reused.
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

ConnectionPtr UpstreamPool::checkout(std::string_view endpoint) {
  const auto it = idle_.find(endpoint);
  if (it == idle_.end()) {
    return nullptr;
  }
  auto& stack = it->second;
  const core::TimePoint now = clock_.now();
  while (!stack.empty()) {
    Idle entry = std::move(stack.back());
    stack.pop_back();
    --idle_count_;
    if (now - entry.since < max_idle_time_ && looks_alive(entry.connection->stream.socket())) {
      return std::move(entry.connection);
    }
    beast::error_code ignored;
    entry.connection->stream.socket().close(ignored);
  }
  return nullptr;
}

void UpstreamPool::checkin(std::string_view endpoint, ConnectionPtr connection,
                           std::size_t max_idle) {
  auto it = idle_.find(endpoint);
  if (it == idle_.end()) {
    it = idle_.emplace(std::string(endpoint), std::vector<Idle>{}).first;
  }
  if (it->second.size() >= max_idle) {
    beast::error_code ignored;
    connection->stream.socket().close(ignored);
    return;
  }
  connection->stream.expires_never();
  connection->mark_idle();
  if (connection->buffer.capacity() > kIdleBufferLimit) {
    connection->buffer.shrink_to_fit();  // after a large body: an idle connection keeps little
  }
  it->second.push_back(Idle{std::move(connection), clock_.now()});
  ++idle_count_;
}

std::size_t UpstreamPool::sweep(const std::function<bool(std::string_view)>& keep) {
  const core::TimePoint now = clock_.now();
  std::size_t closed = 0;
  for (auto it = idle_.begin(); it != idle_.end();) {
    const bool kept_endpoint = keep(it->first);
    auto& stack = it->second;
    std::erase_if(stack, [&](Idle& e) {
      const bool drop = !kept_endpoint || now - e.since >= max_idle_time_ ||
                        !looks_alive(e.connection->stream.socket());
      if (drop) {
        beast::error_code ignored;
        e.connection->stream.socket().close(ignored);
        ++closed;
      }
      return drop;
    });
    it = stack.empty() ? idle_.erase(it) : std::next(it);
  }
  idle_count_ -= closed;
  return closed;
}

void UpstreamPool::clear() {
  for (auto& [endpoint, stack] : idle_) {
    for (auto& e : stack) {
      beast::error_code ignored;
      e.connection->stream.socket().close(ignored);
    }
  }
  idle_.clear();
  idle_count_ = 0;
}

}  // namespace sluice::proxy
