// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {

/// Composes the gateway's own answer to `ctx` into `ctx.down_out` (docs/behaviour.md "Gateway
/// answers"): the status of `ctx.error`, `Server: sluice`, `Content-Type: application/json`,
/// `X-Request-Id`, `Allow` (405), `Retry-After` (when `ctx.retry_after_s` > 0), the rate-limit
/// fields, `Content-Length`, `Connection` as `ctx.keep_alive` says, then the body
/// (`ctx.reply_body`, else `{"error":"<reason>"}`), left out for a HEAD request. `version` is the
/// client's (10 or 11). Sets `ctx.outcome.status` and `bytes_out` to what the write will send.
void compose_reply(RequestContext& ctx, unsigned version, bool head_request);

/// The whole HTTP/1.1 answer `error` makes outside any request (no request id, nothing routed):
/// its status, `Server: sluice`, the JSON body, `Connection: close`.
[[nodiscard]] std::string standalone_reply(GatewayError error);

}  // namespace sluice::proxy
