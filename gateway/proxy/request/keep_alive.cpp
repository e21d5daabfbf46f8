// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/request/keep_alive.hpp"

namespace sluice::proxy {

bool decide_keep_alive(const RequestContext& ctx, const KeepAliveFacts& facts) {
  if (!ctx.client_keep_alive || facts.draining || !facts.request_read || facts.closes_itself) {
    return false;
  }
  return !(ctx.error && closes_connection(*ctx.error));
}

}  // namespace sluice::proxy
