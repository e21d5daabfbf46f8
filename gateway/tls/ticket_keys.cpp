// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/ticket_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <mutex>
#include <stdexcept>

namespace sluice::tls {
namespace {

/// The index under which every SSL_CTX keeps its TicketKeys (ex_data; Asio owns app_data).
int keys_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int on_ticket_key(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                  EVP_MAC_CTX* mac, int enc) {
  const auto* keys =
      static_cast<const TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), keys_index()));
  if (keys == nullptr) {
    return -1;
  }
  const int answer = keys->on_ticket(name, iv, cipher, mac, enc);
  // TLS 1.3 tickets are single-use for a careful client (RFC 8446 §C.4): a resumed session
  // gets a fresh one, or the client's next connection is a full handshake.
  return enc == 0 && answer == 1 && SSL_version(ssl) >= TLS1_3_VERSION ? 2 : answer;
}

/// AES-256-CBC, fetched from the provider once: EVP_aes_256_cbc() would be looked up by name (a
/// lock and string compares) on every ticket sealed or opened.
const EVP_CIPHER* ticket_cipher() {
  static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr);
  return cipher != nullptr ? cipher : EVP_aes_256_cbc();
}

bool set_mac_key(EVP_MAC_CTX* mac, const std::array<unsigned char, 32>& key) {
  char digest[] = "sha256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key.data()),
                                        key.size()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end(),
  };
  return EVP_MAC_CTX_set_params(mac, params) == 1;
}

}  // namespace

TicketKeys::TicketKeys() : current_(random_key()) {}

TicketKeys::Key TicketKeys::random_key() {
  Key key;
  if (RAND_bytes(key.name.data(), static_cast<int>(key.name.size())) != 1 ||
      RAND_bytes(key.aes.data(), static_cast<int>(key.aes.size())) != 1 ||
      RAND_bytes(key.hmac.data(), static_cast<int>(key.hmac.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed: no entropy for session ticket keys");
  }
  return key;
}

void TicketKeys::install(SSL_CTX* ctx) const {
  SSL_CTX_set_ex_data(ctx, keys_index(), const_cast<TicketKeys*>(this));
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, &on_ticket_key);
}

void TicketKeys::rotate() {
  Key next = random_key();
  std::unique_lock lock(mutex_);
  previous_ = current_;
  current_ = next;
}

int TicketKeys::on_ticket(unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                          EVP_MAC_CTX* mac, int enc) const {
  std::shared_lock lock(mutex_);
  if (enc == 1) {
    if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(ticket_cipher())) != 1) {
      return -1;
    }
    std::copy(current_.name.begin(), current_.name.end(), name);
    return EVP_EncryptInit_ex2(cipher, ticket_cipher(), current_.aes.data(), iv, nullptr) == 1 &&
                   set_mac_key(mac, current_.hmac)
               ? 1
               : -1;
  }
  const auto named = [&](const Key& key) {
    return std::equal(key.name.begin(), key.name.end(), name);
  };
  const Key* key = named(current_)                  ? &current_
                   : previous_ && named(*previous_) ? &*previous_
                                                    : nullptr;
  if (key == nullptr) {
    return 0;  // a key rotated away (or never ours): a full handshake
  }
  if (!set_mac_key(mac, key->hmac) ||
      EVP_DecryptInit_ex2(cipher, ticket_cipher(), key->aes.data(), iv, nullptr) != 1) {
    return -1;
  }
  return key == &current_ ? 1 : 2;  // the previous key's tickets are renewed
}

}  // namespace sluice::tls
