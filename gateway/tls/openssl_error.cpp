// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/openssl_error.hpp"

#include <openssl/err.h>

namespace sluice::tls {

std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) {
    return "unknown OpenSSL error";
  }
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "OpenSSL error " + std::to_string(code);
}

}  // namespace sluice::tls
