// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/identify_step.hpp"

#include "gateway/log/user_hash.hpp"
#include "gateway/proxy/steps/identity.hpp"

namespace sluice::proxy {

std::array<char, 12> user_label(const core::KeyedHash& hash, std::string_view user) {
  return log::user_label(hash(user));
}

void identify_step(RequestContext& ctx, const Peer& peer, const core::KeyedHash* hash,
                   bool log_label) {
  if (ctx.route == nullptr) {
    return;
  }
  const RouteLimit* limit = ctx.route->rate_limit;
  const bool labels = hash != nullptr && log_label;
  if (limit == nullptr && !labels) {
    return;  // nobody needs the user
  }
  if (ctx.auth_label == "none") {  // else auth_step() set the verified user
    const config::Config& config = ctx.snapshot->config();
    ctx.user = identify(ctx.head().fields, config.identity, peer.client_cert, peer.address,
                        peer.text, config.http.trusted_proxies, ctx.user_scratch);
  }
  if (hash == nullptr || (!labels && (limit == nullptr || !limit->top_users))) {
    return;
  }
  // One hash for both: the heavy hitters show the log's label (docs/operating.md).
  ctx.user_hash = (*hash)(ctx.user);
  ctx.has_user_hash = true;
  if (labels) {
    ctx.user_label = log::user_label(ctx.user_hash);
    ctx.has_user_label = true;
  }
}

}  // namespace sluice::proxy
