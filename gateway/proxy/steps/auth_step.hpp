// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gateway/auth/credential_slot.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/proxy/steps/auth_failure_ledger.hpp"
#include "gateway/proxy/steps/identify_step.hpp"

namespace sluice::proxy {

/// What auth_step() works with: the worker's credentials (null: the gateway verifies nothing)
/// and the failure ledger (null: no flood shedding).
struct AuthTools {
  auth::WorkerCredentials* credentials = nullptr;
  AuthFailureLedger* failures = nullptr;
};

/// Step 1a, authenticate (docs/identity.md), after routing and before identify_step(): the
/// first verifying identity source (`{"jwt": true}`: `Authorization: Bearer`; `{"api_key":
/// true}`: the `auth.api_keys.header`) for which the request carries a credential checks it.
/// - verified: `ctx.user` (in `ctx.user_scratch`), `ctx.tier` and `ctx.auth_label` are set;
///   a repeated token costs no signature check (the worker's token cache);
/// - refused: 401 (kUnauthorized, `ctx.auth_reason` and the Bearer challenge set) on a route
///   with `auth` required or optional; on an `auth: off` route the credential is ignored;
/// - none sent: 401 `missing` on a required route, else nothing (the other sources name the
///   user);
/// - the client address used up `auth.failure_policy`: 429 (kAuthFailuresExceeded) before
///   anything is verified (a route with `auth: off` ignores the credential instead).
/// Every check is counted in `sluice_auth_total`. Needs the route.
[[nodiscard]] std::optional<GatewayError> auth_step(RequestContext& ctx, const Peer& peer,
                                                    const AuthTools& tools);

}  // namespace sluice::proxy
