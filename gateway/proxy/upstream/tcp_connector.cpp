// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/upstream/tcp_connector.hpp"

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <string>
#include <string_view>

namespace sluice::proxy {
namespace {

/// What the connect deadline cancels: the socket being connected (and the TLS handshake on
/// it), and the resolver while a host name is being resolved.
struct Attempt {
  UpstreamStream* stream = nullptr;
  Resolver* resolver = nullptr;

  static void expire(void* self) noexcept {
    auto* a = static_cast<Attempt*>(self);
    StreamOps<UpstreamStream>::cancel(*a->stream);
    if (a->resolver != nullptr) {
      a->resolver->cancel();
    }
  }
};

}  // namespace

Task<boost::system::error_code> TcpConnector::connect_tcp(UpstreamStream& stream,
                                                          const UpstreamEndpoint& endpoint,
                                                          const Deadline& deadline,
                                                          Resolver*& resolving) {
  if (endpoint.address) {
    auto [ec] = co_await stream.socket().async_connect(*endpoint.address, kAsTuple);
    co_return ec;
  }
  // A resolver of its own: cancelling it on a timeout must not fail other connects.
  Resolver resolver(executor_);
  resolving = &resolver;
  auto [rec, results] =
      co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), kAsTuple);
  resolving = nullptr;
  if (rec || deadline.expired()) {
    co_return rec;
  }
  auto [ec, connected] = co_await net::async_connect(stream.socket(), results, kAsTuple);
  co_return ec;
}

Task<boost::system::error_code> TcpConnector::handshake(UpstreamStream& stream,
                                                        const UpstreamEndpoint& endpoint) {
  stream.start_tls(endpoint.tls->context());
  SSL* ssl = stream.tls()->native_handle();
  if (!endpoint.tls->prepare(ssl, endpoint.host)) {
    note_tls_failure(endpoint, "the server name cannot be set");
    co_return net::error::invalid_argument;
  }
  const bool h2 = endpoint.protocol == config::UpstreamProtocol::kH2;
  if (h2) {
    static constexpr std::array<unsigned char, 3> kH2Alpn{2, 'h', '2'};
    SSL_set_alpn_protos(ssl, kH2Alpn.data(), kH2Alpn.size());
  }
  auto [ec] = co_await stream.tls()->async_handshake(net::ssl::stream_base::client, kAsTuple);
  if (ec && ec != net::error::operation_aborted) {
    note_tls_failure(endpoint, tls::handshake_failure(ssl, ec));
  }
  if (!ec && h2) {
    const unsigned char* chosen = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(ssl, &chosen, &size);
    if (std::string_view(reinterpret_cast<const char*>(chosen), chosen == nullptr ? 0 : size) !=
        "h2") {
      note_tls_failure(endpoint, "the backend did not choose h2 by ALPN");
      co_return net::error::no_protocol_option;
    }
  }
  co_return ec;
}

Task<Connected<UpstreamStream>> TcpConnector::connect(const UpstreamEndpoint& endpoint,
                                                      core::Duration timeout) {
  Connected<UpstreamStream> out = co_await open(endpoint, timeout);
  if (out.connection) {
    out.connection->watch(ops_);  // it will receive the response's first bytes
  }
  co_return out;
}

Task<Connected<UpstreamStream>> TcpConnector::open(const UpstreamEndpoint& endpoint,
                                                   core::Duration timeout) {
  Connected<UpstreamStream> out;
  auto conn = std::make_shared<UpstreamConnection<UpstreamStream>>(executor_);
  Attempt attempt{&conn->stream, nullptr};
  Deadline deadline(sweep_, &Attempt::expire, &attempt);
  deadline.arm(sweep_.clock().now() + timeout);
  out.error = co_await connect_tcp(conn->stream, endpoint, deadline, attempt.resolver);
  if (!out.error && !deadline.expired()) {
    StreamOps<UpstreamStream>::prepare(conn->stream);
    if (endpoint.tls) {
      out.error = co_await handshake(conn->stream, endpoint);
      conn->tls = endpoint.tls.get();
    }
  }
  deadline.disarm();
  if (deadline.expired()) {
    out.error = beast::error::timeout;
  }
  if (!out.error) {
    out.connection = std::move(conn);
  }
  co_return out;
}

void TcpConnector::note_tls_failure(const UpstreamEndpoint& endpoint, const std::string& reason) {
  // At most one line a second per worker: a backend with a bad certificate fails every
  // request, and the log must stay readable. The next line says how many were folded into it.
  const core::TimePoint now = sweep_.clock().now();
  if (now < next_log_) {
    ++suppressed_;
    return;
  }
  next_log_ = now + std::chrono::seconds(1);
  log_->warn("upstream tls handshake failed endpoint={} reason=\"{}\" suppressed_since_last={}",
             endpoint.label, reason, std::exchange(suppressed_, 0));
}

}  // namespace sluice::proxy
