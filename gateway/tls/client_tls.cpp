// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/client_tls.hpp"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "gateway/config/endpoint.hpp"
#include "gateway/tls/openssl_error.hpp"

namespace sluice::tls {

namespace ssl = boost::asio::ssl;

ClientTls::~ClientTls() = default;

std::shared_ptr<const ClientTls> ClientTls::load(const config::BackendTlsConfig& config,
                                                 const std::string& path, std::string& error) {
  std::shared_ptr<ClientTls> client(new ClientTls());
  client->config_ = config;
  client->context_ = std::make_unique<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = client->context_->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);  // pooled idle connections keep no buffers
  ERR_clear_error();
  if (config.ca) {
    if (SSL_CTX_load_verify_locations(ctx, config.ca->c_str(), nullptr) != 1) {
      error = path + ".ca: cannot load " + *config.ca + ": " + openssl_reason();
      return nullptr;
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    error = path + ".ca: cannot load the system's CA store: " + openssl_reason();
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, config.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  if (config.cert && config.key) {
    if (SSL_CTX_use_certificate_chain_file(ctx, config.cert->c_str()) != 1) {
      error = path + ".cert: cannot load " + *config.cert + ": " + openssl_reason();
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, config.key->c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      error = path + ".key: " + *config.key + " cannot be loaded or is not the key of " +
              *config.cert + ": " + openssl_reason();
      return nullptr;
    }
  }
  return client;
}

bool ClientTls::prepare(SSL* ssl, std::string_view host) const {
  const std::string name(config_.server_name ? std::string_view(*config_.server_name) : host);
  const bool is_ip = !config_.server_name && config::parse_ip_address(host).has_value();
  // (SSL_set_tlsext_host_name without the macro's C cast)
  if (!is_ip && SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                         const_cast<char*>(name.c_str())) != 1) {
    return false;
  }
  if (!config_.verify) {
    return true;
  }
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) == 1
               : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) == 1;
}

std::string handshake_failure(const SSL* ssl, const boost::system::error_code& ec) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  return ec.message();
}

}  // namespace sluice::tls
