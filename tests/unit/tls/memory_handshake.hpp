// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gateway/tls/client_certificate.hpp"
#include "gateway/tls/server_tls.hpp"
#include "tests/support/test_pki.hpp"

// The fixtures of the ServerTls tests: certificates from a test CA, and handshakes with an
// OpenSSL client in memory.
namespace sluice::tls::memory_handshake {

using testing::TestPki;

inline config::TlsCertificateConfig cert_config(const TestPki::Issued& issued,
                                                std::vector<std::string> names = {}) {
  return {issued.cert, issued.key, std::move(names), std::nullopt};
}

class ServerTlsTest : public ::testing::Test {
 protected:
  TestPki pki;
  std::shared_ptr<TicketKeys> keys_ = std::make_shared<TicketKeys>();
};

/// Handshakes between an OpenSSL client and a ServerTls in memory (a BIO pair): no sockets,
/// so tickets and client certificates are tested exactly.
class MemoryHandshakeTest : public ServerTlsTest {
 protected:
  using Ctx = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;
  using Ssl = std::unique_ptr<SSL, decltype(&SSL_free)>;
  using Session = std::unique_ptr<SSL_SESSION, decltype(&SSL_SESSION_free)>;

  struct Result {
    bool ok = false;
    bool reused = false;
    std::string served_subject;                   ///< the certificate the client got, "/CN=..."
    std::string cipher;                           ///< the suite negotiated (OpenSSL's name)
    std::string alpn;                             ///< the protocol ALPN chose; empty: none
    std::string stapled;                          ///< the OCSP response stapled (DER); empty: none
    Session session{nullptr, &SSL_SESSION_free};  ///< the client's, with the ticket it got
    ClientCertificate client_cert;                ///< what the server read
  };

  std::shared_ptr<const ServerTls> serve(const std::string& path = "listeners[0].tls") {
    std::string error;
    auto served = ServerTls::load(config_, path, keys_, error);
    EXPECT_TRUE(served) << error;
    return served;
  }

  /// One connection: `client` (may hold a certificate), resuming `resume` when given.
  Result connect(const ServerTls& served, SSL_CTX* client, SSL_SESSION* resume = nullptr) {
    Ssl c(SSL_new(client), &SSL_free);
    Ssl s(SSL_new(served.initial_context().native_handle()), &SSL_free);
    BIO* client_bio = nullptr;
    BIO* server_bio = nullptr;
    BIO_new_bio_pair(&client_bio, 0, &server_bio, 0);
    SSL_set_bio(c.get(), client_bio, client_bio);
    SSL_set_bio(s.get(), server_bio, server_bio);
    SSL_set_connect_state(c.get());
    SSL_set_accept_state(s.get());
    if (resume != nullptr) {
      SSL_set_session(c.get(), resume);
    }
    Result result;
    bool client_done = false;
    bool server_done = false;
    for (int round = 0; round < 20 && !(client_done && server_done); ++round) {
      for (auto [ssl, done] :
           {std::pair{c.get(), &client_done}, std::pair{s.get(), &server_done}}) {
        if (*done) {
          continue;
        }
        const int rc = SSL_do_handshake(ssl);
        const int why = SSL_get_error(ssl, rc);
        if (rc != 1 && why != SSL_ERROR_WANT_READ && why != SSL_ERROR_WANT_WRITE) {
          ERR_clear_error();
          return result;
        }
        *done = rc == 1;
      }
    }
    // The server's verdict on a TLS 1.3 client certificate and the ticket come after the
    // client's handshake: a read on each side takes them in.
    char byte = 0;
    if (SSL_read(s.get(), &byte, 1) <= 0 && SSL_get_error(s.get(), -1) == SSL_ERROR_SSL) {
      ERR_clear_error();
      return result;
    }
    if (SSL_read(c.get(), &byte, 1) <= 0 && SSL_get_error(c.get(), -1) != SSL_ERROR_WANT_READ) {
      ERR_clear_error();
      return result;  // the server refused after the client's Finished (a TLS 1.3 alert)
    }
    result.ok = client_done && server_done;
    result.reused = SSL_session_reused(s.get()) == 1;
    result.session.reset(SSL_get1_session(c.get()));
    result.client_cert = read_client_certificate(s.get());
    if (const X509* peer = SSL_get0_peer_certificate(c.get())) {
      char subject[256];
      X509_NAME_oneline(X509_get_subject_name(peer), subject, sizeof subject);
      result.served_subject = subject;
    }
    result.cipher = SSL_get_cipher_name(c.get());
    const unsigned char* alpn = nullptr;
    unsigned alpn_length = 0;
    SSL_get0_alpn_selected(c.get(), &alpn, &alpn_length);
    result.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_length);
    const unsigned char* staple = nullptr;
    const long staple_length = SSL_get_tlsext_status_ocsp_resp(c.get(), &staple);
    if (staple != nullptr && staple_length > 0) {
      result.stapled.assign(reinterpret_cast<const char*>(staple),
                            static_cast<std::size_t>(staple_length));
    }
    // A clean close: OpenSSL marks the session of a connection freed mid-stream unresumable.
    SSL_set_shutdown(c.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_set_shutdown(s.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    return result;
  }

  /// A client context; with `identity`, it presents that certificate.
  static Ctx client(const TestPki::Issued* identity = nullptr) {
    Ctx ctx(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free);
    if (identity != nullptr) {
      EXPECT_EQ(SSL_CTX_use_certificate_file(ctx.get(), identity->cert.c_str(), SSL_FILETYPE_PEM),
                1);
      EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), identity->key.c_str(), SSL_FILETYPE_PEM), 1);
    }
    return ctx;
  }

  config::ListenerTlsConfig config_ = [this] {
    config::ListenerTlsConfig config;
    config.certificates = {cert_config(pki.issue("server", "server", {"server.test"}))};
    return config;
  }();
};

}  // namespace sluice::tls::memory_handshake
