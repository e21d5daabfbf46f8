// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/auth_step.hpp"

#include <array>
#include <chrono>

#include "gateway/proxy/steps/identity.hpp"

namespace sluice::proxy {
namespace {

using auth::AuthFailure;
using config::RouteAuth;

enum class Method : std::size_t { kJwt, kApiKey, kNone };
constexpr std::array<std::string_view, 3> kMethodNames{"jwt", "api_key", "none"};

/// `result` of sluice_auth_total: ok, the nine refusal reasons (in AuthFailure's order), shed.
constexpr std::size_t kOk = 0;
constexpr std::size_t kShed = 10;

std::size_t result_index(AuthFailure failure) {
  return 1 + static_cast<std::size_t>(failure);
}

void count(RequestContext& ctx, Method method, std::size_t result) {
  if (ctx.route->metrics == nullptr) {
    return;
  }
  std::string_view name = "ok";
  if (result == kShed) {
    name = "shed";
  } else if (result != kOk) {
    name = auth::reason_name(static_cast<AuthFailure>(result - 1));
  }
  ctx.route->metrics->auth().count(static_cast<std::size_t>(method),
                                   kMethodNames[static_cast<std::size_t>(method)], result, name);
}

/// The RFC 6750 §3 challenge for a refusal: bare when nothing was sent, else with
/// `error="invalid_token"` and a short description.
std::string_view challenge(AuthFailure failure) {
  switch (failure) {
    case AuthFailure::kMissing:
      return R"(Bearer realm="sluice")";
    case AuthFailure::kMalformed:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="malformed credential")";
    case AuthFailure::kBadSignature:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="bad signature")";
    case AuthFailure::kExpired:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="the token expired")";
    case AuthFailure::kNotYetValid:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="the token is not valid yet")";
    case AuthFailure::kWrongIssuer:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="wrong issuer")";
    case AuthFailure::kWrongAudience:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="wrong audience")";
    case AuthFailure::kUnknownKey:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="unknown key")";
    case AuthFailure::kAlgorithmNotAllowed:
      return R"(Bearer realm="sluice", error="invalid_token", error_description="algorithm not allowed")";
  }
  return R"(Bearer realm="sluice")";
}

GatewayError refuse(RequestContext& ctx, AuthFailure failure) {
  ctx.auth_reason = auth::reason_name(failure);
  ctx.extra[0] = {"WWW-Authenticate", challenge(failure)};
  ctx.extra_count = 1;
  ctx.body_scratch.assign(R"({"error":"unauthorized","reason":")")
      .append(ctx.auth_reason)
      .append(R"("})");
  ctx.reply_body = ctx.body_scratch;
  return GatewayError::kUnauthorized;
}

/// The address the failure policy counts: the client as identified through trusted proxies,
/// worked out only when the ledger is asked (a cached verified token never needs it).
class ClientAddress {
 public:
  ClientAddress(const RequestContext& ctx, const Peer& peer) : ctx_(ctx), peer_(peer) {}
  std::string_view get() {
    if (!known_) {
      const auto& trusted = ctx_.snapshot->config().http.trusted_proxies;
      const auto client = client_ip(ctx_.head().fields, peer_.address, trusted);
      if (client == peer_.address) {
        value_ = peer_.text;
      } else {
        scratch_ = forwarded_address(client);
        value_ = scratch_;
      }
      known_ = true;
    }
    return value_;
  }

 private:
  const RequestContext& ctx_;
  const Peer& peer_;
  std::string scratch_;
  std::string_view value_;
  bool known_ = false;
};

/// What checking one credential found.
struct Checked {
  std::optional<AuthFailure> failure;
  bool shed = false;
  core::Duration retry_after{};  ///< shed: when the address may try again
  std::string_view user;         ///< views the credential set or the token cache: copy at once
  std::string_view tier;
};

/// `fresh` keeps a verification made now: the views of the result may point into it.
Checked check_jwt(auth::WorkerCredentials& credentials, std::string_view token,
                  AuthFailureLedger* ledger, ClientAddress& address, auth::Verification& fresh) {
  const auth::CredentialSet& set = credentials.current();
  const auto now = std::chrono::system_clock::now();
  const auth::Verification* known =
      set.jwt != nullptr ? credentials.tokens().find(token, now) : nullptr;
  if (known == nullptr || std::holds_alternative<AuthFailure>(*known)) {
    core::Duration retry_after{};
    if (ledger != nullptr && ledger->tripped(address.get(), retry_after)) {
      return {std::nullopt, true, retry_after, {}, {}};
    }
  }
  if (known == nullptr) {
    fresh = set.jwt != nullptr ? set.jwt->verify(token, now)
                               : auth::Verification(AuthFailure::kUnknownKey);
    if (set.jwt != nullptr) {
      credentials.tokens().remember(token, fresh, now);
    }
    known = &fresh;
  }
  if (const auto* verified = std::get_if<auth::VerifiedToken>(known)) {
    const std::string_view tier = verified->tier ? std::string_view(*verified->tier) : "";
    return {std::nullopt, false, {}, verified->user, tier};
  }
  const AuthFailure failure = std::get<AuthFailure>(*known);
  if (failure == AuthFailure::kUnknownKey) {
    credentials.slot().unknown_key_seen();  // perhaps a rotated key: the refresher looks again
  }
  if (ledger != nullptr) {
    ledger->count_failure(address.get());
  }
  return {failure, false, {}, {}, {}};
}

Checked check_api_key(auth::WorkerCredentials& credentials, std::string_view key,
                      AuthFailureLedger* ledger, ClientAddress& address) {
  core::Duration retry_after{};
  if (ledger != nullptr && ledger->tripped(address.get(), retry_after)) {
    return {std::nullopt, true, retry_after, {}, {}};
  }
  const auth::CredentialSet& set = credentials.current();
  const auth::ApiKey* found = set.api_keys != nullptr ? set.api_keys->find(key) : nullptr;
  if (found != nullptr) {
    return {std::nullopt, false, {}, found->user, found->tier};
  }
  if (ledger != nullptr) {
    ledger->count_failure(address.get());
  }
  return {AuthFailure::kUnknownKey, false, {}, {}, {}};
}

std::optional<GatewayError> settle(RequestContext& ctx, Method method, const Checked& checked) {
  const RouteAuth mode = ctx.route->auth;
  if (checked.shed) {
    count(ctx, method, kShed);
    if (mode == RouteAuth::kOff) {
      return std::nullopt;  // the credential is ignored: the other sources name the user
    }
    ctx.retry_after_s = static_cast<unsigned>(std::max<std::int64_t>(
        1, std::chrono::ceil<std::chrono::seconds>(checked.retry_after).count()));
    return GatewayError::kAuthFailuresExceeded;
  }
  if (checked.failure) {
    count(ctx, method, result_index(*checked.failure));
    if (mode == RouteAuth::kOff) {
      return std::nullopt;
    }
    return refuse(ctx, *checked.failure);
  }
  count(ctx, method, kOk);
  ctx.user_scratch.assign(checked.user);
  ctx.user = ctx.user_scratch;
  ctx.tier.assign(checked.tier);
  ctx.auth_label = kMethodNames[static_cast<std::size_t>(method)];
  return std::nullopt;
}

}  // namespace

std::optional<GatewayError> auth_step(RequestContext& ctx, const Peer& peer,
                                      const AuthTools& tools) {
  if (ctx.route == nullptr || tools.credentials == nullptr) {
    return std::nullopt;
  }
  const config::Config& config = ctx.snapshot->config();
  const http1::FieldList& fields = ctx.head().fields;
  for (const config::IdentitySource& source : config.identity) {
    Method method = Method::kNone;
    std::string_view credential;
    if (source.kind == config::IdentitySource::Kind::kJwt) {
      method = Method::kJwt;
      credential = bearer_token(fields);
    } else if (source.kind == config::IdentitySource::Kind::kApiKey && config.auth.api_keys) {
      method = Method::kApiKey;
      credential = header_value(fields, config.auth.api_keys->header);
    }
    if (credential.empty()) {
      continue;
    }
    ClientAddress address(ctx, peer);
    auth::Verification fresh = AuthFailure::kMissing;
    const Checked checked =
        method == Method::kJwt
            ? check_jwt(*tools.credentials, credential, tools.failures, address, fresh)
            : check_api_key(*tools.credentials, credential, tools.failures, address);
    return settle(ctx, method, checked);
  }
  if (ctx.route->auth == RouteAuth::kRequired) {
    count(ctx, Method::kNone, result_index(AuthFailure::kMissing));
    return refuse(ctx, AuthFailure::kMissing);
  }
  return std::nullopt;
}

}  // namespace sluice::proxy
