// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <optional>
#include <shared_mutex>

// Session ticket keys (docs/tls.md "Session resumption"): one set per process, shared by every
// listener and worker thread, so a client resumes whichever thread accepts it.
namespace sluice::tls {

/// The keys that encrypt session tickets: the current one issues tickets, the previous one is
/// still accepted (its tickets are renewed under the current key). rotate() retires the
/// previous key, so a ticket lives through at most two rotation periods. Keys are random,
/// never written anywhere. Thread-safe: handshakes on any thread read the keys while the
/// control thread rotates them.
class TicketKeys {
 public:
  /// How often the gateway rotates the keys (docs/tls.md "Session resumption").
  static constexpr auto kRotationPeriod = std::chrono::hours(12);

  TicketKeys();  ///< starts with one random key

  /// Installs the ticket callback on `ctx` (every context of a listener gets it: OpenSSL asks
  /// the one a connection started with). `this` must outlive `ctx`'s connections.
  void install(SSL_CTX* ctx) const;

  /// Makes a new current key; the current one becomes the previous; the previous is dropped.
  void rotate();

  /// The ticket callback's work (public for the C callback). `enc` 1: pick the current key,
  /// fill `name` and `iv`; 0: find the key `name` names. Returns OpenSSL's answer: 1 (use it),
  /// 2 (use it and issue a fresh ticket), 0 (unknown key: a full handshake), -1 (error).
  int on_ticket(unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac,
                int enc) const;

 private:
  struct Key {
    std::array<unsigned char, 16> name{};
    std::array<unsigned char, 32> aes{};   // AES-256-CBC
    std::array<unsigned char, 32> hmac{};  // HMAC-SHA256
  };
  static Key random_key();

  mutable std::shared_mutex mutex_;  // guards the keys; taken shared per ticket
  Key current_;
  std::optional<Key> previous_;
};

}  // namespace sluice::tls
