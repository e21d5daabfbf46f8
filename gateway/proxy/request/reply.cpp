// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/request/reply.hpp"

#include "gateway/proxy/request/grpc_call.hpp"

namespace sluice::proxy {

namespace {

/// The fields every answer of the gateway carries when it has them: the request id,
/// Retry-After, and the extra fields (the RateLimit ones).
void add_answer_fields(RequestContext& ctx, http1::GatherList& out) {
  if (!ctx.request_id.view().empty()) {
    out.add_copy("X-Request-Id: ");
    out.add_copy(ctx.request_id.view());
    out.add_copy("\r\n");
  }
  if (ctx.retry_after_s > 0) {
    out.add_copy("Retry-After: ");
    out.add_decimal(ctx.retry_after_s);
    out.add_copy("\r\n");
  }
  for (const http1::ExtraField& f : ctx.extra_fields()) {
    out.add_copy(f.name);
    out.add_copy(": ");
    out.add(f.value);
    out.add_copy("\r\n");
  }
}

/// A gRPC call's answer (docs/grpc.md "Answers sluice makes itself"): HTTP 200 with the status in
/// the head and no body, which HTTP/2 sends as one HEADERS frame ending the stream (gRPC's
/// trailers-only form); the request id, Retry-After and the RateLimit fields stay as fields.
void compose_grpc_reply(RequestContext& ctx, GrpcStatus status, std::string_view message) {
  http1::GatherList& out = ctx.down_out;
  out.add_copy(
      "HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Type: application/grpc\r\ngrpc-status: ");
  out.add_decimal(static_cast<unsigned>(status));
  out.add_copy("\r\ngrpc-message: ");
  out.add_copy(message);  // (the reasons are plain words: no percent-encoding needed)
  out.add_copy("\r\n");
  add_answer_fields(ctx, out);
  out.add_copy(ctx.keep_alive ? "Content-Length: 0\r\n\r\n"
                              : "Content-Length: 0\r\nConnection: close\r\n\r\n");
  ctx.outcome.status = 200;
  ctx.outcome.bytes_out = 0;
  ctx.outcome.grpc_status = static_cast<int>(status);
}

}  // namespace

void compose_reply(RequestContext& ctx, unsigned version, bool head_request) {
  const ErrorInfo& e = info(*ctx.error);
  http1::GatherList& out = ctx.down_out;
  out.clear();
  if (ctx.grpc) {
    if (const auto status = grpc_status_of(*ctx.error)) {
      compose_grpc_reply(ctx, *status, e.reason);
      return;
    }
  }
  const auto status = static_cast<unsigned>(e.status);
  out.add_copy(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  out.add_decimal(status);
  out.add_copy(" ");
  const auto reason = boost::beast::http::obsolete_reason(e.status);
  out.add_copy({reason.data(), reason.size()});
  out.add_copy("\r\nServer: sluice\r\nContent-Type: application/json\r\n");
  if (!ctx.allow.empty()) {
    out.add_copy("Allow: ");
    out.add(ctx.allow);
    out.add_copy("\r\n");
  }
  if (!ctx.location.empty()) {
    out.add_copy("Location: ");
    out.add(ctx.location);
    out.add_copy("\r\n");
  }
  add_answer_fields(ctx, out);
  std::string_view body = ctx.reply_body;
  if (body.empty()) {
    ctx.body_scratch.assign(R"({"error":")").append(e.reason).append(R"("})");
    body = ctx.body_scratch;
  }
  out.add_copy("Content-Length: ");
  out.add_decimal(body.size());
  if (version == 10) {
    out.add_copy(ctx.keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\n\r\n");
  } else {
    out.add_copy(ctx.keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  }
  if (!head_request) {
    out.add(body);
  }
  ctx.outcome.status = status;
  ctx.outcome.bytes_out = head_request ? 0 : body.size();
}

std::string standalone_reply(GatewayError error) {
  const ErrorInfo& e = info(error);
  const std::string body = std::string(R"({"error":")").append(e.reason).append(R"("})");
  const auto reason = boost::beast::http::obsolete_reason(e.status);
  return "HTTP/1.1 " + std::to_string(static_cast<unsigned>(e.status)) + " " +
         std::string(reason.data(), reason.size()) +
         "\r\nServer: sluice\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace sluice::proxy
