// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/head_rewrite.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/container/small_vector.hpp>
#include <charconv>

#include "gateway/http1/transfer_codings.hpp"

namespace sluice::http1 {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using beast::iequals;

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kForwardedFor = "X-Forwarded-For";
constexpr std::string_view kForwardedProto = "X-Forwarded-Proto";
constexpr std::string_view kForwardedHost = "X-Forwarded-Host";
constexpr std::string_view kRequestId = "X-Request-Id";

/// The field names the Connection fields list (RFC 9110 §7.6.1). Framing fields and Host are
/// never removed through it: the body is re-framed anyway, and a client must not be able to
/// strip them. Nor is Upgrade when an upgrade is forwarded (`keep_upgrade`).
class ConnectionTokens {
 public:
  explicit ConnectionTokens(const FieldList& fields, bool keep_upgrade = false) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].id != http::field::connection) {
        continue;
      }
      for (const auto token : http::token_list(fields[i].value)) {
        const std::string_view name(token.data(), token.size());
        if (!iequals(name, "content-length") && !iequals(name, "transfer-encoding") &&
            !iequals(name, "host") && !(keep_upgrade && iequals(name, "upgrade"))) {
          names_.push_back(name);
        }
      }
    }
  }
  [[nodiscard]] bool lists(std::string_view name) const noexcept {
    return std::any_of(names_.begin(), names_.end(),
                       [name](std::string_view n) { return iequals(n, name); });
  }

 private:
  boost::container::small_vector<std::string_view, 8> names_;
};

bool all_digits(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// Content-Length sent other than as one plain number (a list of equal values, or repeated):
/// the parser accepted it, and it is forwarded as one plain field.
bool content_length_needs_collapse(const HeadCommon& head) noexcept {
  std::size_t n = 0;
  bool plain = true;
  for (std::size_t i = 0; i < head.fields.size(); ++i) {
    if (head.fields[i].id == http::field::content_length) {
      ++n;
      plain = plain && all_digits(head.fields[i].value);
    }
  }
  return n > 1 || (n == 1 && !plain);
}

/// Copies the fields `keep` accepts as runs of original bytes (a folded field is written anew).
template <typename Keep>
void copy_fields(const HeadCommon& head, Keep&& keep, GatherList& out) {
  const FieldList& fields = head.fields;
  if (fields.empty()) {
    return;
  }
  std::uint32_t run = fields[0].line_begin;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldRef& f = fields[i];
    const bool kept = keep(f);
    if (kept && f.raw) {
      continue;
    }
    out.add({head.base + run, f.line_begin - run});
    run = f.line_end;
    if (kept) {  // folded: one line, the continuation lines joined by spaces
      out.add(f.name);
      out.add_copy(": ");
      out.add(f.value);
      out.add_copy(kCrlf);
    }
  }
  out.add({head.base + run, fields[fields.size() - 1].line_end - run});
}

void add_field(GatherList& out, std::string_view name, std::string_view value) {
  out.add_copy(name);
  out.add_copy(": ");
  out.add(value);
  out.add_copy(kCrlf);
}

/// The framing fields sluice writes itself: Content-Length when it was collapsed, and one
/// Transfer-Encoding line of `codings` (the message's own, read strictly) then `then`, when
/// either is not empty. The client's or upstream's own Transfer-Encoding lines never go on.
void add_framing(GatherList& out, const HeadCommon& head, bool collapse_length,
                 std::string_view codings, std::string_view then) {
  if (collapse_length) {
    out.add_copy("Content-Length: ");
    out.add_decimal(head.content_length);
    out.add_copy(kCrlf);
  }
  if (codings.empty() && then.empty()) {
    return;
  }
  out.add_copy("Transfer-Encoding: ");
  out.add(codings);
  if (!codings.empty() && !then.empty()) {
    out.add_copy(", ");
  }
  out.add(then);
  out.add_copy(kCrlf);
}

}  // namespace

bool hop_by_hop_by_name(const FieldRef& f) noexcept {
  switch (f.id) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
      return true;
    default:
      return f.name.size() >= 6 && iequals(f.name.substr(0, 6), "proxy-");
  }
}

bool usable_request_id(std::string_view id) noexcept {
  return !id.empty() && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

void write_request_head(const RequestHead& head, const RequestRewrite& rw, GatherList& out) {
  out.add(head.method);
  out.add_copy(" ");
  out.add(rw.target);
  out.add_copy(" HTTP/1.1\r\n");
  if (rw.replace_host) {
    add_field(out, "Host", rw.host);
  }
  const ConnectionTokens connection(head.fields, rw.upgrade);
  const bool collapse_length = content_length_needs_collapse(head);
  bool client_proto = false;
  bool client_host = false;
  copy_fields(
      head,
      [&](const FieldRef& f) {
        if (std::any_of(rw.strip.begin(), rw.strip.end(),
                        [&](std::string_view name) { return iequals(f.name, name); })) {
          return false;
        }
        if (rw.upgrade && f.id == http::field::upgrade) {
          return true;
        }
        if (hop_by_hop_by_name(f) || connection.lists(f.name) || f.id == http::field::expect) {
          return false;
        }
        if (f.id == http::field::content_length) {
          return !collapse_length;
        }
        if (f.id == http::field::transfer_encoding) {
          return false;  // one line of sluice's own follows
        }
        if (f.id == http::field::host) {
          return !rw.replace_host;
        }
        if (f.id != http::field::unknown) {
          return true;  // the fields below are not among Beast's known names
        }
        if (iequals(f.name, kForwardedFor)) {
          return false;
        }
        if (iequals(f.name, kForwardedProto)) {
          client_proto = true;
          return rw.peer_trusted;
        }
        if (iequals(f.name, kForwardedHost)) {
          client_host = true;
          return rw.peer_trusted;
        }
        return !(iequals(f.name, kRequestId) && !rw.request_id.empty());
      },
      out);
  add_framing(out, head, collapse_length, head.transfer_codings, {});
  out.add_copy("X-Forwarded-For: ");
  for (std::size_t i = 0; i < head.fields.size(); ++i) {
    const FieldRef& f = head.fields[i];
    if (f.id == http::field::unknown && !f.value.empty() && iequals(f.name, kForwardedFor)) {
      out.add(f.value);
      out.add_copy(", ");
    }
  }
  out.add(rw.client_address);
  out.add_copy(kCrlf);
  if (!rw.peer_trusted || !client_proto) {
    add_field(out, kForwardedProto, rw.proto);
  }
  if (!rw.forwarded_host.empty() && (!rw.peer_trusted || !client_host)) {
    add_field(out, kForwardedHost, rw.forwarded_host);
  }
  if (!rw.request_id.empty()) {
    add_field(out, kRequestId, rw.request_id);
  }
  if (rw.upgrade) {
    out.add_copy("Connection: Upgrade\r\n");
  }
  out.add_copy(kCrlf);
}

namespace {

/// Which of the upstream's response fields go on to the client (write_response_head() and
/// for_each_response_field() read the same rules): not the hop-by-hop ones nor what Connection
/// lists, not Transfer-Encoding (sluice writes its own), not a Content-Length that is collapsed,
/// not a field an added one replaces. Notes whether an X-Request-Id goes on.
class ResponseFieldFilter {
 public:
  ResponseFieldFilter(const ResponseHead& head, const ResponseRewrite& rw)
      : rw_(rw),
        connection_(head.fields, rw.upgrade),
        collapse_length_(content_length_needs_collapse(head)) {}

  bool operator()(const FieldRef& f) {
    if (rw_.upgrade && f.id == http::field::upgrade) {
      return true;
    }
    if (hop_by_hop_by_name(f) || connection_.lists(f.name)) {
      return false;
    }
    if (f.id == http::field::content_length) {
      return !collapse_length_;
    }
    if (f.id == http::field::transfer_encoding) {
      return false;  // one line of sluice's own follows
    }
    if (std::any_of(rw_.extra.begin(), rw_.extra.end(),
                    [&](const ExtraField& e) { return iequals(e.name, f.name); })) {
      return false;
    }
    if (f.id == http::field::unknown && iequals(f.name, kRequestId)) {
      has_request_id_ = true;
    }
    return true;
  }

  [[nodiscard]] bool collapse_length() const noexcept { return collapse_length_; }
  /// After the fields went through: whether sluice adds its X-Request-Id.
  [[nodiscard]] bool adds_request_id() const noexcept {
    return !has_request_id_ && !rw_.request_id.empty();
  }

 private:
  const ResponseRewrite& rw_;
  ConnectionTokens connection_;
  bool collapse_length_;
  bool has_request_id_ = false;
};

}  // namespace

void write_response_head(const ResponseHead& head, const ResponseRewrite& rw, GatherList& out) {
  out.add_copy(rw.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  out.add_decimal(head.status);
  out.add_copy(" ");
  if (head.reason.empty()) {
    const auto reason = http::obsolete_reason(static_cast<http::status>(head.status));
    out.add({reason.data(), reason.size()});
  } else {
    out.add(head.reason);
  }
  out.add_copy(kCrlf);
  ResponseFieldFilter keep(head, rw);
  const bool collapse_length = keep.collapse_length();
  copy_fields(head, keep, out);
  switch (rw.framing) {
    case BodyFraming::kAsIs:
      add_framing(out, head, collapse_length, head.transfer_codings, {});
      break;
    case BodyFraming::kChunked:  // the upstream's codings, if any, then sluice's chunks
      add_framing(out, head, collapse_length, head.transfer_codings, "chunked");
      break;
    case BodyFraming::kUnchunk:
      add_framing(out, head, collapse_length, without_final_chunked(head.transfer_codings), {});
      break;
  }
  if (keep.adds_request_id()) {
    add_field(out, kRequestId, rw.request_id);
  }
  for (const ExtraField& e : rw.extra) {
    add_field(out, e.name, e.value);
  }
  if (rw.upgrade) {
    out.add_copy("Connection: Upgrade\r\n");
  } else if (rw.version == 10 && rw.keep_alive) {
    out.add_copy("Connection: keep-alive\r\n");
  } else if (rw.version != 10 && !rw.keep_alive) {
    out.add_copy("Connection: close\r\n");
  }
  out.add_copy(kCrlf);
}

bool for_each_response_field(const ResponseHead& head, const ResponseRewrite& rw,
                             const FieldSink& sink) {
  if (rw.upgrade || rw.framing != BodyFraming::kAsIs || !head.transfer_codings.empty()) {
    return false;
  }
  ResponseFieldFilter keep(head, rw);
  for (std::size_t i = 0; i < head.fields.size(); ++i) {
    const FieldRef& f = head.fields[i];
    if (keep(f)) {
      sink(f.name, f.value);
    }
  }
  if (keep.collapse_length()) {
    std::array<char, 24> digits{};
    const auto end =
        std::to_chars(digits.data(), digits.data() + digits.size(), head.content_length).ptr;
    sink("Content-Length", {digits.data(), static_cast<std::size_t>(end - digits.data())});
  }
  if (keep.adds_request_id()) {
    sink(kRequestId, rw.request_id);
  }
  for (const ExtraField& e : rw.extra) {
    sink(e.name, e.value);
  }
  return true;
}

}  // namespace sluice::http1
