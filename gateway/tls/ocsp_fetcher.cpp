// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/ocsp_fetcher.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/vector_body.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>

#include "gateway/core/utc_time.hpp"
#include "gateway/tls/ocsp_staple.hpp"

namespace sluice::tls {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;

constexpr auto kExchangeTimeout = 10s;  ///< connect, send, answer: all of it
constexpr std::uint64_t kMaxResponse = 64 * 1024;
constexpr auto kMinRefresh = 1min;
constexpr auto kFirstRetry = 30s;
constexpr auto kMaxRetry = 10min;
constexpr auto kAsTuple = net::as_tuple(net::use_awaitable);

}  // namespace

bool parse_http_url(std::string_view url, HttpUrl& out) {
  constexpr std::string_view kScheme = "http://";
  if (url.size() <= kScheme.size() || url.substr(0, kScheme.size()) != kScheme) {
    return false;
  }
  url.remove_prefix(kScheme.size());
  const auto slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (const auto colon = authority.rfind(':');
      colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return false;
    }
    out.port = std::string(port);
    authority = authority.substr(0, colon);
  }
  if (authority.size() > 2 && authority.front() == '[' && authority.back() == ']') {
    authority = authority.substr(1, authority.size() - 2);
  }
  out.host = std::string(authority);
  return !out.host.empty();
}

OcspFetcher::OcspFetcher(net::any_io_executor executor, std::shared_ptr<spdlog::logger> log,
                         std::function<void()> on_change)
    : executor_(std::move(executor)), log_(std::move(log)), on_change_(std::move(on_change)) {}

OcspFetcher::~OcspFetcher() {
  *alive_ = false;
}

void OcspFetcher::watch(const std::vector<std::shared_ptr<const ServerTls>>& served,
                        const std::vector<std::string>& listeners) {
  std::vector<std::shared_ptr<Target>> next;
  for (std::size_t l = 0; l < served.size(); ++l) {
    if (!served[l]) {
      continue;
    }
    for (std::size_t c = 0; c < served[l]->certificates().size(); ++c) {
      const ServedCertificate& cert = served[l]->certificates()[c];
      if (!cert.ocsp_fetch) {
        continue;
      }
      auto target = std::make_shared<Target>();
      target->owner = served[l];
      target->cert = &cert;
      target->listener = listeners[l];
      target->index = c;
      target->url = ocsp_responder_url(cert.leaf);
      for (const auto& old : targets_) {  // a certificate watched before keeps its staple
        if (X509_cmp(old->cert->leaf, cert.leaf) == 0) {
          cert.ocsp->store(old->cert->ocsp->load());
          target->next_fetch = old->next_fetch;
          target->failures = old->failures;
          break;
        }
      }
      next.push_back(std::move(target));
    }
  }
  targets_ = std::move(next);
}

void OcspFetcher::tick(SystemTime now) {
  for (const auto& target : targets_) {
    const auto staple = target->cert->ocsp->load();
    if (staple && staple->next_update <= now) {
      target->cert->ocsp->store(nullptr);  // never stapled stale (the handshake checks too)
      log_->warn("tls ocsp staple expired listener={} certificate={} next_update={}",
                 target->listener, target->index, core::utc_iso8601(staple->next_update));
      on_change_();
    }
    if (!target->running && target->next_fetch <= now) {
      target->running = true;
      net::co_spawn(executor_, fetch(target), net::detached);
    }
  }
}

net::awaitable<void> OcspFetcher::fetch(std::shared_ptr<Target> target) {
  const std::shared_ptr<bool> alive = alive_;
  const ServedCertificate& cert = *target->cert;
  std::string error;
  const std::vector<unsigned char> body =
      co_await ask(target->url, ocsp_request(cert.leaf, cert.issuer), error);
  if (!*alive) {
    co_return;  // the fetcher is gone (the gateway stops)
  }
  target->running = false;
  const auto now = std::chrono::system_clock::now();
  if (!body.empty()) {
    if (auto response = verify_ocsp_response(body, cert.leaf, cert.issuer, now, error)) {
      const auto next_update = response->next_update;
      cert.ocsp->store(std::make_shared<const OcspResponse>(std::move(*response)));
      target->failures = 0;
      target->next_fetch =
          now + std::max<std::chrono::system_clock::duration>(kMinRefresh, (next_update - now) / 2);
      log_->info("tls ocsp staple refreshed listener={} certificate={} next_update={}",
                 target->listener, target->index, core::utc_iso8601(next_update));
      on_change_();
      co_return;
    }
  }
  const auto retry = std::min<std::chrono::system_clock::duration>(
      kMaxRetry, kFirstRetry * (std::int64_t{1} << std::min(target->failures, 5)));
  ++target->failures;
  target->next_fetch = now + retry;
  const auto staple = cert.ocsp->load();
  log_->warn(
      "tls ocsp fetch failed listener={} certificate={} responder={} problem={} retry_in_s={} "
      "stapled_until={}",
      target->listener, target->index, target->url, error,
      std::chrono::duration_cast<std::chrono::seconds>(retry).count(),
      staple ? core::utc_iso8601(staple->next_update) : std::string("nothing stapled"));
}

net::awaitable<std::vector<unsigned char>> OcspFetcher::ask(
    const std::string& url, const std::vector<unsigned char>& request, std::string& error) {
  HttpUrl where;
  if (!parse_http_url(url, where)) {
    error = "the responder URL is not http://HOST[:PORT]/PATH: " + url;
    co_return std::vector<unsigned char>{};
  }
  if (request.empty()) {
    error = "cannot build the OCSP request";
    co_return std::vector<unsigned char>{};
  }
  net::ip::tcp::resolver resolver(executor_);
  auto [rec, endpoints] = co_await resolver.async_resolve(where.host, where.port, kAsTuple);
  if (rec) {
    error = "cannot resolve " + where.host + ": " + rec.message();
    co_return std::vector<unsigned char>{};
  }
  beast::tcp_stream stream(executor_);
  stream.expires_after(kExchangeTimeout);
  auto [cec, connected] = co_await stream.async_connect(endpoints, kAsTuple);
  if (cec) {
    error = "cannot connect to " + where.host + ":" + where.port + ": " + cec.message();
    co_return std::vector<unsigned char>{};
  }
  http::request<http::vector_body<unsigned char>> req{http::verb::post, where.target, 11};
  req.set(http::field::host, where.port == "80" ? where.host : where.host + ":" + where.port);
  req.set(http::field::content_type, "application/ocsp-request");
  req.set(http::field::accept, "application/ocsp-response");
  req.set(http::field::user_agent, "sluice");
  req.body() = request;
  req.prepare_payload();
  auto [wec, written] = co_await http::async_write(stream, req, kAsTuple);
  beast::flat_buffer buffer;
  http::response_parser<http::vector_body<unsigned char>> parser;
  parser.body_limit(kMaxResponse);
  auto [ec, read] = wec ? std::tuple(wec, std::size_t{0})
                        : co_await http::async_read(stream, buffer, parser, kAsTuple);
  (void)written;
  (void)read;
  (void)connected;
  if (ec) {
    error = "no answer from " + url + ": " + ec.message();
    co_return std::vector<unsigned char>{};
  }
  if (parser.get().result() != http::status::ok) {
    error = url + " answered " + std::to_string(parser.get().result_int());
    co_return std::vector<unsigned char>{};
  }
  co_return std::move(parser.get().body());
}

}  // namespace sluice::tls
