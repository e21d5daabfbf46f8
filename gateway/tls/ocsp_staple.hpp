// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/x509.h>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/core/shared_slot.hpp"

// OCSP stapling (docs/tls.md, "OCSP stapling"): a responder's answer about a served
// certificate, verified before it is ever stapled, and the slot a listener staples from.
namespace sluice::tls {

/// An OCSP response that verified: successful, about the certificate, signed by its issuer (or
/// a responder the issuer delegated to), status good, current.
struct OcspResponse {
  std::vector<unsigned char> der;  ///< what is stapled, as the responder sent it
  std::chrono::system_clock::time_point this_update;
  std::chrono::system_clock::time_point next_update;
};

/// Verifies `der` for `leaf`, issued by `issuer` (from the certificate file's chain), at `now`.
/// Returns the response, or nothing with `error` saying why it must not be stapled (not a response,
/// not successful, another certificate's, a bad signature, revoked or unknown, not yet valid, past
/// nextUpdate, no nextUpdate).
[[nodiscard]] std::optional<OcspResponse> verify_ocsp_response(
    std::span<const unsigned char> der, X509* leaf, X509* issuer,
    std::chrono::system_clock::time_point now, std::string& error);

/// The issuer of `leaf` among `chain`; null when the chain does not hold it.
[[nodiscard]] X509* find_issuer(X509* leaf, STACK_OF(X509) * chain) noexcept;

/// The OCSP responder URL of `leaf`'s Authority Information Access; empty when it names none.
[[nodiscard]] std::string ocsp_responder_url(X509* leaf);

/// The DER OCSP request about `leaf` (issued by `issuer`), SHA-1 certificate id as responders
/// expect (RFC 6960; RFC 5019 for the lightweight profile), no nonce (cacheable).
[[nodiscard]] std::vector<unsigned char> ocsp_request(X509* leaf, X509* issuer);

/// What a certificate staples now: handshakes on every worker read it, the control thread
/// replaces it (a fetched response) or clears it (expired).
using OcspStaple = core::SharedSlot<OcspResponse>;

}  // namespace sluice::tls
