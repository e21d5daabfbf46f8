// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/server_tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "gateway/tls/openssl_error.hpp"

namespace sluice::tls {
namespace {

namespace ssl = boost::asio::ssl;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// The DNS names of the certificate's subjectAltName, lower case.
std::vector<std::string> san_dns_names(X509* cert) {
  std::vector<std::string> names;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans == nullptr) {
    return names;
  }
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans, i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING* text = name->d.dNSName;
      names.push_back(lower({reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                             static_cast<std::size_t>(ASN1_STRING_length(text))}));
    }
  }
  GENERAL_NAMES_free(sans);
  return names;
}

std::chrono::system_clock::time_point not_after(X509* cert) {
  std::tm tm{};
  ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string subject(X509* cert) {
  char buffer[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buffer, sizeof buffer);
  return buffer;
}

/// The SNI callback: switches the connection to the chosen certificate's context.
int on_server_name(SSL* ssl, int* /*alert*/, void* arg) {
  const auto* served = static_cast<const ServerTls*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) {
    return SSL_TLSEXT_ERR_NOACK;  // no SNI: the default certificate
  }
  const ServedCertificate& chosen = served->select(lower(name));
  if (&chosen != &served->certificates().front()) {
    SSL_set_SSL_CTX(ssl, chosen.context->native_handle());
  }
  return SSL_TLSEXT_ERR_OK;
}

/// ALPN: the first protocol of ours the client offers (`arg` is our list in wire format).
int on_alpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
            unsigned int inlen, void* arg) {
  const auto* ours = static_cast<const std::vector<unsigned char>*>(arg);
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, ours->data(), static_cast<unsigned>(ours->size()),
                            in, inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // nothing in common: go on without ALPN (HTTP/1.1)
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

bool name_matches(std::string_view pattern, std::string_view name) noexcept {
  if (!pattern.starts_with("*.")) {
    return pattern == name;
  }
  // One label: "a.example.com" matches "*.example.com", "a.b.example.com" and "example.com" not.
  const auto dot = name.find('.');
  return dot != std::string_view::npos && dot > 0 && name.substr(dot) == pattern.substr(1);
}

ServerTls::~ServerTls() = default;

const ServedCertificate& ServerTls::select(std::string_view server_name) const {
  for (const auto& cert : certificates_) {
    if (std::find(cert.names.begin(), cert.names.end(), server_name) != cert.names.end()) {
      return cert;
    }
  }
  for (const auto& cert : certificates_) {
    for (const auto& pattern : cert.names) {
      if (pattern.starts_with("*.") && name_matches(pattern, server_name)) {
        return cert;
      }
    }
  }
  return certificates_.front();
}

bool ServerTls::configure(SSL_CTX* ctx, const config::ListenerTlsConfig& config,
                          const std::string& path, std::string& error) const {
  SSL_CTX_set_min_proto_version(ctx, config.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);  // idle connections keep no buffers
  // Resumption by tickets only: no per-context cache (a lock every handshake, memory per
  // session); one ticket per full handshake is what a client resumes with.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 1);
  const auto* session_context = reinterpret_cast<const unsigned char*>(path.data());
  SSL_CTX_set_session_id_context(
      ctx, session_context,
      static_cast<unsigned>(std::min<std::size_t>(path.size(), SSL_MAX_SID_CTX_LENGTH)));
  keys_->install(ctx);
  SSL_CTX_set_alpn_select_cb(ctx, &on_alpn, const_cast<std::vector<unsigned char>*>(&alpn_));
  if (!config.client_ca) {
    return true;
  }
  ERR_clear_error();
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.client_ca->c_str());
  if (names == nullptr ||
      SSL_CTX_load_verify_locations(ctx, config.client_ca->c_str(), nullptr) != 1) {
    error = path + ".client_ca: cannot load " + *config.client_ca + ": " + openssl_reason();
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return false;
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // takes `names`
  SSL_CTX_set_verify(
      ctx, SSL_VERIFY_PEER | (config.require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
      nullptr);
  return true;
}

std::shared_ptr<const ServerTls> ServerTls::load(const config::ListenerTlsConfig& config,
                                                 const std::string& path,
                                                 std::shared_ptr<const TicketKeys> keys,
                                                 std::string& error) {
  std::shared_ptr<ServerTls> served(new ServerTls());
  served->keys_ = std::move(keys);
  for (const std::string& protocol : config.alpn) {
    {  // in the listener's order of preference (docs/http2.md)
      served->alpn_.push_back(static_cast<unsigned char>(protocol.size()));
      served->alpn_.insert(served->alpn_.end(), protocol.begin(), protocol.end());
    }
  }
  const auto now = std::chrono::system_clock::now();
  for (std::size_t i = 0; i < config.certificates.size(); ++i) {
    const config::TlsCertificateConfig& cert = config.certificates[i];
    const std::string at = path + ".certificates[" + std::to_string(i) + "]";
    auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
    SSL_CTX* ctx = context->native_handle();
    if (!served->configure(ctx, config, path, error)) {
      return nullptr;
    }
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, cert.cert.c_str()) != 1) {
      error = at + ".cert: cannot load " + cert.cert + ": " + openssl_reason();
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, cert.key.c_str(), SSL_FILETYPE_PEM) != 1) {
      const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
      error = mismatch ? at + ".key: " + cert.key + " is not the key of " + cert.cert
                       : at + ".key: cannot load " + cert.key + ": " + openssl_reason();
      ERR_clear_error();
      return nullptr;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      error = at + ".key: " + cert.key + " is not the key of " + cert.cert;
      ERR_clear_error();
      return nullptr;
    }
    X509* x509 = SSL_CTX_get0_certificate(ctx);
    ServedCertificate served_cert;
    served_cert.not_after = not_after(x509);
    served_cert.subject = subject(x509);
    if (served_cert.not_after <= now) {
      error = at + ".cert: " + cert.cert + " has expired";
      return nullptr;
    }
    if (cert.server_names.empty()) {
      served_cert.names = san_dns_names(x509);
    } else {
      for (const auto& name : cert.server_names) {
        served_cert.names.push_back(lower(name));
      }
    }
    served_cert.context = std::move(context);
    served->certificates_.push_back(std::move(served_cert));
  }
  if (served->certificates_.empty()) {
    error = path + ".certificates: must name at least one certificate";
    return nullptr;
  }
  if (served->certificates_.size() == 1) {
    return served;  // nothing to choose: no SNI callback on every handshake
  }
  SSL_CTX* initial = served->certificates_.front().context->native_handle();
  // (the SSL_CTX_set_tlsext_servername_* macros, without their C casts)
  SSL_CTX_callback_ctrl(initial, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
                        reinterpret_cast<void (*)()>(&on_server_name));
  SSL_CTX_ctrl(initial, SSL_CTRL_SET_TLSEXT_SERVERNAME_ARG, 0, served.get());
  return served;
}

}  // namespace sluice::tls
