// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::admin {

/// The admin API's bearer-token check (docs/behaviour.md "Admin API"). The comparison takes the
/// same time whatever the presented token is: both sides are reduced to SHA-256 digests, which are
/// compared with OpenSSL's CRYPTO_memcmp, so neither the content nor the length of the token leaks
/// through timing. Immutable after construction: thread-safe.
class BearerAuth {
 public:
  /// std::nullopt or an empty token: no token configured (the API is open).
  explicit BearerAuth(const std::optional<std::string>& token);

  [[nodiscard]] bool enabled() const noexcept { return digest_.has_value(); }
  /// True when no token is configured, or `authorization` is `Bearer <token>` (the scheme is
  /// case-insensitive, RFC 9110 §11.1).
  [[nodiscard]] bool allows(std::string_view authorization) const;
  /// Who made an admin change, for versions and audit lines (docs/operating.md "Audit lines"):
  /// the first 12 hex digits of the SHA-256 of the configured token, or "open" without one.
  /// Names the token without revealing it; the same token gives the same actor on every run.
  [[nodiscard]] const std::string& actor() const noexcept { return actor_; }

 private:
  using Digest = std::array<unsigned char, 32>;
  static Digest digest_of(std::string_view text);

  std::optional<Digest> digest_;
  std::string actor_ = "open";
};

}  // namespace sluice::admin
