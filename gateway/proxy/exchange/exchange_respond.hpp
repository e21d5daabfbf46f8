// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>

#include "gateway/proxy/exchange/exchange_response.hpp"

// The response's way to the client once its head is in (docs/architecture.md, "The request
// path"): written at once with a body that is all here (the fast path), else the rest written
// or relayed as it arrives. Part of exchange() (exchange.hpp); runs on the worker's thread.
namespace sluice::proxy::detail {

/// Composes the response and writes it at once when its whole body is here. The result, or
/// nullopt when the rest must be awaited (respond_rest()).
template <typename Down, typename Up>
std::optional<RelayResult> respond_now(Exchange<Down, Up>& x, bool& chunked,
                                       std::uint64_t& gathered) {
  RequestContext& ctx = x.ctx;
  x.down.buffer.consume(x.request_parsed);  // the request is out: its bytes may go
  ctx.outcome.upstream_time = x.up.clock.now() - x.sent_at;
  boost::system::error_code ec;
  chunked = compose_response(x, gathered, ec);
  RelayResult relay;
  if (ec) {
    relay.read_error = ec;
    return relay;
  }
  if (!ctx.response->is_done()) {
    x.sent = WriteStart{};
    return std::nullopt;
  }
  x.sent = write_now(x.down.stream, ctx.down_out.buffers());
  if (!x.sent.done) {
    return std::nullopt;
  }
  relay.wrote = !x.sent.ec;
  relay.write_error = x.sent.ec;
  relay.complete = !x.sent.ec;
  relay.body_bytes = x.sent.ec ? 0 : gathered;
  x.conn->buffer.consume(ctx.response_parsed);
  return relay;
}

/// The part of a response write that could not leave at once, or a body still arriving.
template <typename Down, typename Up>
Task<RelayResult> respond_rest(Exchange<Down, Up>& x, WriteStart started, bool chunked,
                               std::uint64_t gathered) {
  RequestContext& ctx = x.ctx;
  RelayResult relay;
  if (ctx.response->is_done()) {  // only the write was left
    x.down.write_deadline.arm(x.up.clock.now() + x.client_timeout());
    const auto ec =
        co_await write_rest(x.down.stream, ctx.down_out.buffers(), started.written, x.up.ops);
    x.down.write_deadline.disarm();
    relay.wrote = !ec;
    relay.write_error = ec;
    relay.complete = !ec;
    relay.body_bytes = ec ? 0 : gathered;
    x.conn->buffer.consume(ctx.response_parsed);
    co_return relay;
  }
  relay =
      co_await relay_body(*ctx.response, ctx.response_parsed,
                          ReadEnd<Up>{x.conn->stream, x.conn->buffer, x.up_read, x.timeout()},
                          WriteEnd<Down>{x.down.stream, x.down.write_deadline, x.client_timeout()},
                          ctx.down_out, chunked, x.up.clock, x.up.ops);
  relay.body_bytes += relay.wrote ? gathered : 0;
  co_return relay;
}

}  // namespace sluice::proxy::detail
