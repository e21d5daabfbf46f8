// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/request/reply.hpp"
#include "gateway/proxy/session/h2_session.hpp"
#include "gateway/proxy/session/server_session.hpp"
#include "gateway/proxy/session/tls_stream.hpp"
#include "gateway/tls/client_certificate.hpp"
#include "gateway/tls/server_tls.hpp"

namespace sluice::proxy {

/// The TLS handshake's outcome counters of one listener (`sluice_tls_handshakes_total`).
struct HandshakeCounters {
  prometheus::Counter* ok = nullptr;
  prometheus::Counter* error = nullptr;
};

/// Whether the handshake failed because the client spoke plain HTTP: OpenSSL recognises a first
/// record that starts `GET `, `POST `, `HEAD `, `PUT ` or `CONNE` (as nginx relies on too).
inline bool plain_http_sent(const boost::system::error_code& ec) noexcept {
  if (ec.category() != net::error::get_ssl_category()) {
    return false;
  }
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  return reason == SSL_R_HTTP_REQUEST || reason == SSL_R_HTTPS_PROXY_REQUEST;
}

/// Whether the handshake chose `h2` by ALPN.
inline bool chose_h2(SSL* ssl) noexcept {
  const unsigned char* protocol = nullptr;
  unsigned length = 0;
  SSL_get0_alpn_selected(ssl, &protocol, &length);
  return length == 2 && protocol[0] == 'h' && protocol[1] == '2';
}

/// Serves one client connection of a TLS listener (docs/tls.md): the handshake first, within
/// `http.header_timeout_ms` of the accept (`accepted_at`, else now; the first request head then
/// has what is left of it), closing without a word on failure, garbage or a stall, but with
/// `400 plain_http_on_tls_port` in plain text to a client that spoke plain HTTP; then
/// run_session() over the TLS stream. A connection still in its handshake counts as idle for a
/// drain. With `http2` set and h2 chosen by ALPN, serve_h2_connection() serves it instead
/// (docs/http2.md). Owns the socket and `slot`; runs on the worker's thread; never throws.
template <typename Up>
Task<void> run_tls_session(Socket socket, Peer peer, std::shared_ptr<const tls::ServerTls> served,
                           HandshakeCounters counters, SessionEnv& env, UpstreamContext<Up>& up,
                           ConnectionSlot slot, std::optional<core::TimePoint> accepted_at = {},
                           std::optional<http2::Settings> http2 = std::nullopt,
                           const GoawayCounters* goaways = nullptr) {
  const core::TimePoint accepted = accepted_at.value_or(env.services.clock.now());
  TlsStream stream(std::move(socket), served->initial_context());
  boost::system::error_code ec;
  {
    Deadline deadline(env.sweep, &detail::cancel_stream<TlsStream>, &stream);
    SessionEntry entry(env.sessions, &detail::cancel_stream<TlsStream>,
                       &detail::close_stream<TlsStream>, &stream);
    entry.idle = true;  // nothing was asked yet: a drain may close it
    deadline.arm(accepted + env.view.current()->snapshot->config().http.header_timeout);
    std::tie(ec) = co_await stream.async_handshake(net::ssl::stream_base::server, pooled(env.ops));
    deadline.disarm();
  }
  if (ec) {
    counters.error->Increment();
    if (plain_http_sent(ec) && StreamOps<TlsStream>::is_open(stream)) {
      static const std::string kReply = standalone_reply(GatewayError::kPlainHttpOnTlsPort);
      Socket& raw = stream.next_layer();
      Deadline deadline(env.sweep, &detail::cancel_stream<Socket>, &raw);
      deadline.arm(env.services.clock.now() + detail::kLingerTime);
      co_await net::async_write(raw, net::buffer(kReply), pooled(env.ops));
      deadline.disarm();
      beast::flat_buffer scratch;
      co_await detail::close_gracefully(raw, scratch, deadline, env.services.clock, true);
      co_return;
    }
    StreamOps<TlsStream>::close(stream);
    co_return;
  }
  counters.ok->Increment();
  peer.tls = true;
  peer.client_cert = tls::read_client_certificate(stream.native_handle());
  if (http2 && chose_h2(stream.native_handle())) {
    co_await serve_h2_connection<TlsStream, Up>(stream, peer, *http2, env, up, accepted, goaways);
    co_return;
  }
  co_await run_session<TlsStream, Up>(std::move(stream), std::move(peer), env, up, std::move(slot),
                                      accepted);
}

}  // namespace sluice::proxy
