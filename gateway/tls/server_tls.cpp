// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/server_tls.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <fstream>
#include <iterator>

#include "gateway/tls/openssl_error.hpp"
#include "gateway/tls/tls_policy.hpp"

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
  if (chosen.context != served->certificates().front().context) {
    SSL_set_SSL_CTX(ssl, chosen.context->native_handle());
  }
  return SSL_TLSEXT_ERR_OK;
}

/// ALPN: the first protocol of ours the client offers (`arg` is our list in wire format);
/// nothing in common is the `no_application_protocol` alert (RFC 7301 §3.2).
int on_alpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
            unsigned int inlen, void* arg) {
  const auto* ours = static_cast<const std::vector<unsigned char>*>(arg);
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, ours->data(), static_cast<unsigned>(ours->size()),
                            in, inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // OpenSSL sends no_application_protocol
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

/// The status_request callback (a client asked for a stapled OCSP response): staples the
/// chosen certificate's response while it is current, else nothing.
int on_status_request(SSL* ssl, void* arg) {
  const auto* served = static_cast<const ServerTls*>(arg);
  const ServedCertificate* cert = served->find(SSL_get_certificate(ssl));
  if (cert == nullptr || !cert->ocsp) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  const auto staple = cert->ocsp->load();
  if (!staple || staple->next_update <= std::chrono::system_clock::now()) {
    return SSL_TLSEXT_ERR_NOACK;  // never a stale response
  }
  auto* copy = static_cast<unsigned char*>(OPENSSL_memdup(staple->der.data(), staple->der.size()));
  if (copy == nullptr) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(staple->der.size()));  // takes it
  return SSL_TLSEXT_ERR_OK;
}

struct X509Free {
  void operator()(X509* x) const noexcept { X509_free(x); }
};

/// The leaf certificate of the PEM file `file`; null when it holds none.
std::unique_ptr<X509, X509Free> read_leaf(const std::string& file) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(file.c_str(), "r"), &BIO_free);
  if (!bio) {
    return {nullptr, {}};
  }
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::string key_type_of(X509* cert) {
  switch (EVP_PKEY_get_base_id(X509_get0_pubkey(cert))) {
    case EVP_PKEY_EC:
      return "ECDSA";
    case EVP_PKEY_RSA:
      return "RSA";
    case EVP_PKEY_RSA_PSS:
      return "RSA-PSS";
    case EVP_PKEY_ED25519:
      return "Ed25519";
    case EVP_PKEY_ED448:
      return "Ed448";
    default:
      return "other";
  }
}

/// Reads the DER OCSP response `file` for `served` and staples it when it verifies. A file that
/// cannot be read, or answers about something else, or badly, is an error; a stale one is not
/// (the file's refresher is late, sluice staples nothing): `ocsp_problem` says so for the log.
bool load_staple(ServedCertificate& served, const std::string& file, const std::string& at,
                 std::string& error) {
  std::ifstream in(file, std::ios::binary);
  if (!in.is_open()) {
    error = at + ".ocsp: cannot read " + file;
    return false;
  }
  const std::vector<unsigned char> der((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
  std::string problem;
  auto response = verify_ocsp_response(der, served.leaf, served.issuer,
                                       std::chrono::system_clock::now(), problem);
  if (response) {
    served.ocsp->store(std::make_shared<const OcspResponse>(std::move(*response)));
    return true;
  }
  if (problem.find("stale") != std::string::npos) {
    served.ocsp_problem = file + ": " + problem;
    return true;
  }
  error = at + ".ocsp: " + file + ": " + problem;
  return false;
}

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
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

const ServedCertificate* ServerTls::find(const X509* leaf) const noexcept {
  for (const auto& cert : certificates_) {
    if (cert.leaf == leaf) {
      return &cert;
    }
  }
  return nullptr;
}

bool ServerTls::configure(SSL_CTX* ctx, const config::ListenerTlsConfig& config,
                          const std::string& path, std::string& error) const {
  SSL_CTX_set_min_proto_version(ctx, config.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
  // The client's preference among the suites we allow (all of them strong): ChaCha20 for a
  // client without AES hardware, which puts it first (Mozilla's intermediate profile).
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (!apply_policy(ctx, config, path, error)) {
    return false;
  }
  SSL_CTX_set_dh_auto(ctx, 1);  // DHE suites an operator adds get a group of the key's strength
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);  // idle connections keep no buffers
  // One receive takes what has arrived (a client's whole flight) instead of one for each
  // record's header and one for its body. Safe with TlsSocket: every read asks OpenSSL first,
  // and OpenSSL asks to wait only when what it holds is not a whole record.
  SSL_CTX_set_read_ahead(ctx, 1);
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
  if (std::any_of(config.certificates.begin(), config.certificates.end(),
                  [](const auto& cert) { return cert.ocsp.has_value(); })) {
    // (the SSL_CTX_set_tlsext_status_* macros, without their C casts)
    SSL_CTX_callback_ctrl(ctx, SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB,
                          reinterpret_cast<void (*)()>(&on_status_request));
    SSL_CTX_ctrl(ctx, SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB_ARG, 0, const_cast<ServerTls*>(this));
  }
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

bool ServerTls::add_certificate(const config::ListenerTlsConfig& config, std::size_t index,
                                const std::string& path, std::string& error) {
  const config::TlsCertificateConfig& cert = config.certificates[index];
  const std::string at = path + ".certificates[" + std::to_string(index) + "]";
  ERR_clear_error();
  const auto leaf = read_leaf(cert.cert);
  if (!leaf) {
    error = at + ".cert: cannot load " + cert.cert + ": " + openssl_reason();
    return false;
  }
  ServedCertificate served;
  served.not_after = not_after(leaf.get());
  served.subject = subject(leaf.get());
  served.key_type = key_type_of(leaf.get());
  if (served.not_after <= std::chrono::system_clock::now()) {
    error = at + ".cert: " + cert.cert + " has expired";
    return false;
  }
  if (cert.server_names.empty()) {
    served.names = san_dns_names(leaf.get());
  } else {
    for (const auto& name : cert.server_names) {
      served.names.push_back(lower(name));
    }
  }
  // An earlier certificate for the same names with another key type: its context takes this
  // one too (one certificate per key type), and OpenSSL chooses per client.
  const auto names = sorted(served.names);
  for (const ServedCertificate& earlier : certificates_) {
    const bool same_slot = sorted(earlier.names) == names;
    if (same_slot && std::none_of(certificates_.begin(), certificates_.end(), [&](const auto& c) {
          return c.context == earlier.context && c.key_type == served.key_type;
        })) {
      served.context = earlier.context;
      break;
    }
  }
  if (!served.context) {
    served.context = std::make_shared<ssl::context>(ssl::context::tls_server);
    if (!configure(served.context->native_handle(), config, path, error)) {
      return false;
    }
  }
  SSL_CTX* ctx = served.context->native_handle();
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.cert.c_str()) != 1) {
    error = at + ".cert: cannot load " + cert.cert + ": " + openssl_reason();
    return false;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, cert.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    error = mismatch ? at + ".key: " + cert.key + " is not the key of " + cert.cert
                     : at + ".key: cannot load " + cert.key + ": " + openssl_reason();
    ERR_clear_error();
    return false;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    error = at + ".key: " + cert.key + " is not the key of " + cert.cert;
    ERR_clear_error();
    return false;
  }
  served.leaf = SSL_CTX_get0_certificate(ctx);
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);  // the current certificate's: the one just loaded
  served.issuer = find_issuer(served.leaf, chain);
  if (cert.ocsp) {
    served.ocsp = std::make_shared<OcspStaple>();
    served.ocsp_fetch = *cert.ocsp == "fetch";
    if (served.ocsp_fetch && served.issuer == nullptr) {
      error = at + ".ocsp: \"fetch\" needs the issuer's certificate after the leaf in " +
              cert.cert + " (the request names it, and its answer is verified against it)";
      return false;
    }
    if (served.ocsp_fetch && ocsp_responder_url(served.leaf).empty()) {
      error = at + ".ocsp: \"fetch\" but " + cert.cert +
              " names no OCSP responder (Authority Information Access)";
      return false;
    }
    if (!served.ocsp_fetch && !load_staple(served, *cert.ocsp, at, error)) {
      return false;
    }
  }
  certificates_.push_back(std::move(served));
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
  for (std::size_t i = 0; i < config.certificates.size(); ++i) {
    if (!served->add_certificate(config, i, path, error)) {
      return nullptr;
    }
  }
  if (served->certificates_.empty()) {
    error = path + ".certificates: must name at least one certificate";
    return nullptr;
  }
  const auto& front = served->certificates_.front().context;
  if (std::all_of(served->certificates_.begin(), served->certificates_.end(),
                  [&](const auto& cert) { return cert.context == front; })) {
    return served;  // one context: nothing to choose, no SNI callback on every handshake
  }
  SSL_CTX* initial = front->native_handle();
  // (the SSL_CTX_set_tlsext_servername_* macros, without their C casts)
  SSL_CTX_callback_ctrl(initial, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
                        reinterpret_cast<void (*)()>(&on_server_name));
  SSL_CTX_ctrl(initial, SSL_CTRL_SET_TLSEXT_SERVERNAME_ARG, 0, served.get());
  return served;
}

}  // namespace sluice::tls
