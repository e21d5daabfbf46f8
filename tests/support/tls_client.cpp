// SPDX-License-Identifier: Apache-2.0
#include "tests/support/tls_client.hpp"

#include <openssl/x509.h>

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <stdexcept>

namespace sluice::testing {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;

/// Runs `ioc` until the operation `initiate` starts completes; its error.
template <typename Initiate>
beast::error_code run_tls_io(net::io_context& ioc, Initiate&& initiate) {
  beast::error_code result = net::error::operation_aborted;
  std::forward<Initiate>(initiate)([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace

TlsClient::TlsClient(std::uint16_t port, const Options& options, std::chrono::milliseconds timeout)
    : ctx_(net::ssl::context::tls_client), server_name_(options.server_name), timeout_(timeout) {
  const auto fail = [&](const std::string& what, const beast::error_code& ec) {
    return std::runtime_error("TlsClient 127.0.0.1:" + std::to_string(port) + " " + what + ": " +
                              ec.message());
  };
  ctx_.load_verify_file(options.ca);
  ctx_.set_verify_mode(net::ssl::verify_peer);
  if (options.cert && options.key) {
    ctx_.use_certificate_chain_file(*options.cert);
    ctx_.use_private_key_file(*options.key, net::ssl::context::pem);
  }
  stream_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc_, ctx_);
  SSL* ssl = stream_->native_handle();
  SSL_set1_host(ssl, server_name_.c_str());
  SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(server_name_.c_str()));
  auto& lowest = beast::get_lowest_layer(*stream_);
  lowest.expires_after(timeout_);
  if (auto ec = run_tls_io(ioc_, [&](auto handler) {
        lowest.async_connect({net::ip::address_v4::loopback(), port}, handler);
      })) {
    throw fail("connect", ec);
  }
  lowest.expires_after(timeout_);
  if (auto ec = run_tls_io(ioc_, [&](auto handler) {
        stream_->async_handshake(net::ssl::stream_base::client, handler);
      })) {
    throw fail("handshake", ec);
  }
}

TlsClient::~TlsClient() = default;

void TlsClient::send_get(std::string_view target, const Headers& headers) {
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, server_name_);
  for (const auto& [name, value] : headers) {
    req.set(name, value);
  }
  beast::get_lowest_layer(*stream_).expires_after(timeout_);
  if (auto ec =
          run_tls_io(ioc_, [&](auto handler) { http::async_write(*stream_, req, handler); })) {
    throw std::runtime_error("TlsClient GET " + std::string(target) + ": write: " + ec.message());
  }
}

Response TlsClient::read_response(std::string_view target) {
  Response res;
  beast::get_lowest_layer(*stream_).expires_after(timeout_);
  if (auto ec = run_tls_io(
          ioc_, [&](auto handler) { http::async_read(*stream_, buffer_, res, handler); })) {
    throw std::runtime_error("TlsClient GET " + std::string(target) + ": read: " + ec.message());
  }
  return res;
}

Response TlsClient::get(std::string_view target, const Headers& headers) {
  send_get(target, headers);
  return read_response(target);
}

std::vector<Response> TlsClient::pipeline(const std::vector<std::string>& targets) {
  for (const auto& target : targets) {
    send_get(target, {});
  }
  std::vector<Response> responses;
  for (const auto& target : targets) {
    responses.push_back(read_response(target));
  }
  return responses;
}

std::string TlsClient::peer_subject() const {
  X509* cert = SSL_get0_peer_certificate(stream_->native_handle());
  if (cert == nullptr) {
    return {};
  }
  char buffer[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buffer, sizeof buffer);
  return buffer;
}

std::string TlsClient::peer_serial() const {
  X509* cert = SSL_get0_peer_certificate(stream_->native_handle());
  if (cert == nullptr) {
    return {};
  }
  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  char* hex = BN_bn2hex(serial);
  std::string out(hex);
  OPENSSL_free(hex);
  BN_free(serial);
  return out;
}

void TlsClient::close() {
  auto& lowest = beast::get_lowest_layer(*stream_);
  lowest.expires_after(timeout_);
  (void)run_tls_io(ioc_, [&](auto handler) { stream_->async_shutdown(handler); });
  lowest.close();
}

bool tls_get_works(std::uint16_t port, const TlsClient::Options& options, std::string_view target) {
  try {
    TlsClient client(port, options);
    return client.get(target).result_int() < 500;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace sluice::testing
