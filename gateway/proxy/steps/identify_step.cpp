// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/identify_step.hpp"

#include "gateway/proxy/identity.hpp"

namespace sluice::proxy {

std::array<char, 12> user_label(const core::KeyedHash& hash, std::string_view user) {
  static constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::uint64_t h = hash(user);
  std::array<char, 12> out{};
  for (std::size_t i = out.size(); i-- > 0; h >>= 4U) {
    out[i] = kHex[h & 0xfU];
  }
  return out;
}

void identify_step(RequestContext& ctx, const Peer& peer, const core::KeyedHash* log_hash) {
  if (ctx.route == nullptr || (ctx.route->rate_limit == nullptr && log_hash == nullptr)) {
    return;  // nobody needs the user
  }
  const config::Config& config = ctx.snapshot->config();
  ctx.user = identify(ctx.head().fields, config.identity, peer.client_cert, peer.address, peer.text,
                      config.http.trusted_proxies, ctx.user_scratch);
  if (log_hash != nullptr) {
    ctx.user_label = user_label(*log_hash, ctx.user);
    ctx.has_user_label = true;
  }
}

}  // namespace sluice::proxy
