// SPDX-License-Identifier: Apache-2.0
// The differential check behind "what is judged is what is forwarded" (docs/http-conformance.md,
// docs/fuzzing.md): the input is a client's connection. sluice's own steps judge each request
// (the session's parse_head() and accept_head(): method, target, authority, framing, body), the
// real session forwards them to an upstream that answers each one, and an independent strict
// parser (libhttp-parser) reads the bytes the upstream received. Every forwarded request must
// read the same to it, in one canonical form: no fold, one framing field, nothing left over.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "gateway/proxy/session/session_io.hpp"
#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/fuzz/independent_parser.hpp"
#include "tests/support/proxy_world.hpp"

namespace sluice::fuzz {
namespace {

using nlohmann::json;
namespace http1 = sluice::http1;

/// Routes that rewrite the target (strip_prefix), route by host, and take OPTIONS *; every
/// method libhttp-parser knows is allowed, others get 405 (sluice forwards any token, the
/// reference parser knows a fixed list). No limit, breaker or retry: each request goes up once.
json differential_config() {
  const json methods = json::array({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"});
  return {
      {"access_log", {{"enabled", false}}},
      {"http", {{"max_header_bytes", 4096}, {"max_body_bytes", 65536}}},
      {"backends",
       {{"b",
         {{"endpoints", json::array({"10.0.0.1:80"})},
          {"timeout_ms", 1000},
          {"breaker", {{"enabled", false}}}}}}},
      {"routes", json::array({
                     {{"name", "api"},
                      {"prefix", "/api"},
                      {"backend", "b"},
                      {"methods", methods},
                      {"strip_prefix", true}},
                     {{"name", "vhost"},
                      {"host", "h.example"},
                      {"prefix", "/"},
                      {"backend", "b"},
                      {"methods", methods}},
                     {{"name", "all"}, {"prefix", "/"}, {"backend", "b"}, {"methods", methods}},
                 })},
  };
}

/// One request as sluice judged it.
struct Judged {
  std::string method;
  std::string target;     ///< what the upstream gets: normalized, prefix stripped
  std::string authority;  ///< the upstream's Host
  http1::Framing framing = http1::Framing::kNone;
  std::uint64_t length = 0;
  std::string body;  ///< as sluice's parser read it (chunked: the data only)
  bool complete = false;
};

/// What sluice judges of the connection's requests, by the functions the session runs, in
/// order, up to the first it refuses. `closes`: that refusal closes the connection (nothing
/// after it can go upstream).
struct Judgement {
  std::vector<Judged> requests;
  bool refused = false;
  bool closes = false;
};

Judgement judge(testing::ProxyWorld& world, const std::string& data) {
  Judgement out;
  const proxy::Peer peer{boost::asio::ip::make_address("192.0.2.7"), "192.0.2.7"};
  proxy::RequestContext ctx;
  std::string_view rest = data;
  for (;;) {
    std::size_t scanned = 0;
    std::size_t end = http1::find_head_end(rest, scanned);
    if (end == 0) {
      return out;  // no whole head: nothing more goes upstream
    }
    const std::size_t skip = proxy::detail::ignored_empty_line(rest.substr(0, end));
    rest.remove_prefix(skip);
    end -= skip;
    proxy::begin_request(ctx, world.snapshot(), world.env);
    std::optional<proxy::GatewayError> refused = proxy::parse_head(ctx, rest.substr(0, end));
    if (!refused) {
      refused = proxy::accept_head(ctx, world.env, peer);
    }
    if (refused) {
      out.refused = true;
      out.closes = proxy::closes_connection(*refused);
      return out;
    }
    const http1::RequestHead& head = ctx.head();
    Judged& j = out.requests.emplace_back();
    j.method = head.method;
    j.target = ctx.upstream_target;
    j.authority = ctx.authority;
    j.framing = head.framing;
    j.length = head.content_length;
    rest.remove_prefix(end);
    boost::system::error_code ec;
    while (!ctx.parser->is_done()) {
      const std::size_t used = ctx.parser->put(rest, ec);
      j.body.append(ctx.parser->piece());
      rest.remove_prefix(used);
      if (ec || used == 0) {
        return out;  // cut short or broken: nothing after it is read
      }
    }
    j.complete = true;
    if (!ctx.client_keep_alive) {
      return out;
    }
  }
}

/// The upstream: reads each connection with the independent parser and answers every request
/// it completes, so the session moves on to the next.
class Upstream {
 public:
  explicit Upstream(testing::ProxyWorld& world) : world_(world) {}

  /// Reads what arrived and answers; returns whether anything moved.
  bool pump() {
    bool moved = false;
    for (std::size_t i = 0; i < world_.connector.peers.size(); ++i) {
      if (i == conns_.size()) {
        conns_.emplace_back(std::make_unique<Conn>());
      }
      Conn& c = *conns_[i];
      const std::string bytes = world_.connector.received(i);
      if (bytes.size() > c.seen) {
        moved = true;
        c.parser.feed(std::string_view(bytes).substr(c.seen));
        c.seen = bytes.size();
      }
      for (; c.answered < c.parser.requests().size() && c.parser.requests()[c.answered].complete;
           ++c.answered) {
        order_.emplace_back(i, c.answered);
        constexpr std::string_view kAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        boost::system::error_code ignored;  // the exchange may have closed it
        boost::asio::write(*world_.connector.peers[i], boost::asio::buffer(kAnswer), ignored);
        moved = true;
      }
    }
    world_.run();
    return moved;
  }

  void settle() {
    for (int i = 0; i < 1000 && pump(); ++i) {
    }
  }

  /// Every request the upstream began reading, in the order they completed (an incomplete one,
  /// at most one per connection, last), and whether every connection parsed without error.
  [[nodiscard]] std::vector<const ReadRequest*> requests() const {
    std::vector<const ReadRequest*> out;
    for (const auto& [conn, index] : order_) {
      out.push_back(&conns_[conn]->parser.requests()[index]);
    }
    for (const auto& c : conns_) {
      if (c->answered < c->parser.requests().size()) {
        out.push_back(&c->parser.requests().back());
      }
    }
    return out;
  }
  /// Every connection's bytes and its parser's verdict, for a finding's report.
  void describe(std::ostream& out) const {
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      out << "upstream connection " << i << " (" << conns_[i]->parser.error() << "): ";
      for (const char c : world_.connector.received(i)) {
        if (c == '\r') {
          out << "\\r";
        } else if (c == '\n') {
          out << "\\n\n    ";
        } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
          out << "\\x"
              << "0123456789abcdef"[(c >> 4) & 0xf] << "0123456789abcdef"[c & 0xf];
        } else {
          out << c;
        }
      }
      out << "\n";
    }
  }
  [[nodiscard]] bool all_parsed() const {
    for (const auto& c : conns_) {
      if (c->parser.error() != "HPE_OK") {
        return false;
      }
    }
    return true;
  }

 private:
  struct Conn {
    IndependentParser parser;
    std::size_t seen = 0;
    std::size_t answered = 0;
  };
  testing::ProxyWorld& world_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<std::pair<std::size_t, std::size_t>> order_;
};

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

/// The forwarded request `up` is the judged request `j`, in sluice's canonical form.
void check_same(const Judged& j, const ReadRequest& up) {
  SLUICE_FUZZ_CHECK(up.method == j.method);
  SLUICE_FUZZ_CHECK(up.target == j.target);
  SLUICE_FUZZ_CHECK(up.count("host") == 1 && trimmed(up.value("host")) == j.authority);
  const std::size_t te = up.count("transfer-encoding");
  const std::size_t cl = up.count("content-length");
  SLUICE_FUZZ_CHECK(te + cl <= 1);
  switch (j.framing) {
    case http1::Framing::kNone:
      SLUICE_FUZZ_CHECK(up.body_kind == BodyKind::kNone);
      break;
    case http1::Framing::kContentLength:
      SLUICE_FUZZ_CHECK(up.body_kind == BodyKind::kLength && up.length == j.length);
      break;
    case http1::Framing::kChunked:
      SLUICE_FUZZ_CHECK(up.body_kind == BodyKind::kChunked);
      break;
    case http1::Framing::kUntilClose:
      SLUICE_FUZZ_CHECK(!"a request is never delimited by closing");
      break;
  }
  if (up.complete) {
    SLUICE_FUZZ_CHECK(j.complete && up.body == j.body);
  } else {
    SLUICE_FUZZ_CHECK(j.body.starts_with(up.body));  // cut short: what went up is a prefix
  }
}

/// Whether `data` holds a field name that the reference parser misreads: libhttp-parser 2.9.4
/// marks a message as using Transfer-Encoding as soon as a name's first 17 characters spell
/// it, so `Transfer-Encodingx: chunked` (another field, which sluice forwards as it is) makes it
/// refuse the request. Such inputs are skipped; they say nothing about sluice.
bool reference_misreads(std::string_view data) {
  constexpr std::string_view kName = "\ntransfer-encoding";
  for (std::size_t at = data.find('\n'); at != std::string_view::npos;
       at = data.find('\n', at + 1)) {
    const std::string_view rest = data.substr(at);
    if (rest.size() > kName.size() && boost::beast::iequals(rest.substr(0, kName.size()), kName) &&
        rest[kName.size()] != ':' && rest[kName.size()] != ' ' && rest[kName.size()] != '\t') {
      return true;
    }
  }
  return false;
}

}  // namespace

int request_differential(Input input) {
  const std::string data(text_of(input));
  if (reference_misreads(data)) {
    return 0;
  }
  static const json config = differential_config();
  testing::ProxyWorld world(config);
  const Judgement judged = judge(world, data);

  testing::TestStream client(world.ioc.get_executor());
  testing::TestStream down(world.ioc.get_executor());
  client.connect(down);
  boost::asio::co_spawn(
      world.ioc,
      proxy::run_session(std::move(down),
                         proxy::Peer{boost::asio::ip::make_address("192.0.2.7"), "192.0.2.7"},
                         world.env, world.upstream, proxy::ConnectionSlot(world.gate)),
      [](const std::exception_ptr& escaped) { SLUICE_FUZZ_CHECK(!escaped); });
  Upstream upstream(world);
  world.run();
  boost::asio::write(client, boost::asio::buffer(data));
  upstream.settle();
  world.advance(std::chrono::minutes(2));  // every deadline fires: a stalled body is cut
  upstream.settle();
  client.close();
  upstream.settle();

  // What went up reads cleanly, one request per judged request, in order.
  if (!upstream.all_parsed()) {
    upstream.describe(std::cerr);
  }
  SLUICE_FUZZ_CHECK(upstream.all_parsed());
  const std::vector<const ReadRequest*> forwarded = upstream.requests();
  const bool everything_judged = !judged.refused || judged.closes;
  SLUICE_FUZZ_CHECK(!everything_judged || forwarded.size() <= judged.requests.size());
  for (std::size_t i = 0; i < forwarded.size() && i < judged.requests.size(); ++i) {
    check_same(judged.requests[i], *forwarded[i]);
  }
  for (const ReadRequest* up : forwarded) {  // even past what was judged: no fold anywhere
    for (const auto& [name, value] : up->fields) {
      SLUICE_FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos);
    }
    SLUICE_FUZZ_CHECK(up->count("transfer-encoding") + up->count("content-length") <= 1);
  }
  return 0;
}

}  // namespace sluice::fuzz
