// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {

/// What besides the request itself bears on keeping the client connection.
struct KeepAliveFacts {
  bool draining = false;       ///< the gateway is shutting down
  bool request_read = true;    ///< the request's body has been (or can be) read to its end
  bool closes_itself = false;  ///< the answer is delimited by closing the connection
};

/// Whether the client connection stays open after the answer to `ctx`: the one place that
/// decides, before the answer's head is written (docs/behaviour.md "Keep-alive"). Open only
/// when the client asked for it (HTTP/1.1 without `Connection: close`, or HTTP/1.0 with
/// `keep-alive`), the gateway is not draining, the answer is not for a broken request (400, 408,
/// 413, 431: where the next request starts is unknown), no unread body is left, and the answer
/// is not delimited by closing. An answer that is then cut short closes the connection anyway.
[[nodiscard]] bool decide_keep_alive(const RequestContext& ctx, const KeepAliveFacts& facts);

}  // namespace sluice::proxy
