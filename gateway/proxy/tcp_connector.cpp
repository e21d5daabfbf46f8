// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/tcp_connector.hpp"

#include <boost/asio/connect.hpp>
#include <string>

namespace sluice::proxy {
namespace {

/// What the connect deadline cancels: the socket being connected, and the resolver while a
/// host name is being resolved.
struct Attempt {
  Socket* socket = nullptr;
  Resolver* resolver = nullptr;

  static void expire(void* self) noexcept {
    auto* a = static_cast<Attempt*>(self);
    boost::system::error_code ignored;
    a->socket->cancel(ignored);
    if (a->resolver != nullptr) {
      a->resolver->cancel();
    }
  }
};

}  // namespace

Task<Connected<Socket>> TcpConnector::connect(const UpstreamEndpoint& endpoint,
                                              core::Duration timeout) {
  Connected<Socket> out;
  auto conn = std::make_shared<UpstreamConnection<Socket>>(executor_);
  Attempt attempt{&conn->stream, nullptr};
  Deadline deadline(sweep_, &Attempt::expire, &attempt);
  deadline.arm(sweep_.clock().now() + timeout);
  if (endpoint.address) {
    auto [ec] = co_await conn->stream.async_connect(*endpoint.address, kAsTuple);
    out.error = ec;
  } else {
    // A resolver of its own: cancelling it on a timeout must not fail other connects.
    Resolver resolver(executor_);
    attempt.resolver = &resolver;
    auto [rec, results] =
        co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), kAsTuple);
    attempt.resolver = nullptr;
    out.error = rec;
    if (!rec && !deadline.expired()) {
      auto [ec, connected] = co_await net::async_connect(conn->stream, results, kAsTuple);
      out.error = ec;
    }
  }
  deadline.disarm();
  if (deadline.expired()) {
    out.error = beast::error::timeout;
  }
  if (!out.error) {
    StreamOps<Socket>::prepare(conn->stream);
    conn->watch(ops_);  // it will receive the response's first bytes
    out.connection = std::move(conn);
  }
  co_return out;
}

}  // namespace sluice::proxy
