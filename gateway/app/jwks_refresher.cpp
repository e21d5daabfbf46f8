// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/jwks_refresher.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace sluice::app {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;

constexpr auto kAsTuple = net::as_tuple(net::use_awaitable);
constexpr auto kExchangeTimeout = 10s;
constexpr std::uint64_t kMaxKeySet = std::uint64_t{1} << 20U;  // 1 MiB: a JWKS is a few KiB

}  // namespace

bool parse_https_url(std::string_view url, HttpsUrl& out) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) {
    return false;
  }
  url.remove_prefix(kScheme.size());
  const auto slash = url.find('/');
  const std::string_view authority = url.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  std::string_view host = authority;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    host = authority.substr(1, close - 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.size() < 2 || rest.front() != ':') {
        return false;
      }
      out.port = std::string(rest.substr(1));
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    out.port = std::string(authority.substr(colon + 1));
    if (out.port.empty()) {
      return false;
    }
  }
  out.host = std::string(host);
  return !out.host.empty() && out.port.find_first_not_of("0123456789") == std::string::npos;
}

JwksRefresher::JwksRefresher(net::any_io_executor executor, AuthSetup& auth,
                             const auth::CredentialSlot& slot, metrics::Metrics& metrics,
                             std::shared_ptr<spdlog::logger> log)
    : executor_(std::move(executor)),
      auth_(auth),
      slot_(slot),
      metrics_(metrics),
      log_(std::move(log)) {
  metrics_.jwks_refreshes("ok");  // both series exist from the start, at 0
  metrics_.jwks_refreshes("error");
}

JwksRefresher::~JwksRefresher() {
  *alive_ = false;
}

std::optional<std::string> JwksRefresher::follow(const std::optional<config::JwtConfig>& jwt) {
  const std::optional<std::string> url = jwt ? jwt->jwks_url : std::nullopt;
  const std::optional<std::string> ca = jwt ? jwt->jwks_ca : std::nullopt;
  const auto period = jwt ? jwt->jwks_refresh : period_;
  if (url == url_ && ca == ca_ && period == period_ && (tls_ || !url)) {
    return std::nullopt;
  }
  url_ = url;
  ca_ = ca;
  period_ = period;
  tls_.reset();
  if (!url_) {
    return std::nullopt;
  }
  config::BackendTlsConfig client;
  client.ca = ca_;
  std::string error;
  tls_ = tls::ClientTls::load(client, "auth.jwt.jwks_ca", error);
  if (!tls_) {
    log_->error("jwks fetching off: {}", error);
    return error;
  }
  next_ = Clock::now();  // at once
  tick();
  return std::nullopt;
}

void JwksRefresher::tick() {
  if (!url_ || !tls_ || running_) {
    return;
  }
  const auto now = Clock::now();
  const bool due = now >= next_;
  const bool asked = now - last_attempt_ >= kUnknownKeyInterval && slot_.take_unknown_key();
  if (!due && !asked) {
    return;
  }
  running_ = true;
  last_attempt_ = now;
  net::co_spawn(executor_, fetch(alive_), net::detached);
}

net::awaitable<void> JwksRefresher::fetch(std::shared_ptr<bool> alive) {
  const std::string url = *url_;
  std::string error;
  const std::optional<std::string> body = co_await download(error);
  if (!*alive) {
    co_return;  // the gateway stops
  }
  running_ = false;
  if (body) {
    std::vector<std::string> skipped;
    auto keys = std::make_shared<auth::JwkSet>(auth::JwkSet::parse(*body, error, skipped));
    for (const std::string& why : skipped) {
      log_->warn("jwks key skipped url={} reason={}", url, why);
    }
    if (error.empty() && url_ == url) {
      log_->info("jwks refreshed url={} keys={}", url, keys->size());
      auth_.set_jwks(std::move(keys));
      metrics_.jwks_refreshes("ok").Increment();
      next_ = Clock::now() + period_;
      co_return;
    }
    error = error.empty() ? "the URL changed meanwhile" : "not a key set: " + error;
  }
  metrics_.jwks_refreshes("error").Increment();
  next_ = Clock::now() + std::min<Clock::duration>(period_, kRetry);
  log_->error("jwks refresh failed url={} problem={} (the last good key set stays)", url, error);
}

// GCC 12 reports -Wmismatched-new-delete on this coroutine's frame (as on the exchange's,
// gateway/proxy/exchange/exchange.hpp): Asio's awaitable_frame_base defines both operators the
// frame uses; the warning is GCC's inliner losing track of that.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
net::awaitable<std::optional<std::string>> JwksRefresher::download(std::string& error) {
  HttpsUrl where;
  if (!parse_https_url(*url_, where)) {
    error = "not an https://HOST[:PORT]/PATH URL";
    co_return std::nullopt;
  }
  const std::shared_ptr<const tls::ClientTls> tls = tls_;
  net::ip::tcp::resolver resolver(executor_);
  auto [rec, endpoints] = co_await resolver.async_resolve(where.host, where.port, kAsTuple);
  if (rec) {
    error = "cannot resolve " + where.host + ": " + rec.message();
    co_return std::nullopt;
  }
  beast::ssl_stream<beast::tcp_stream> stream(executor_, tls->context());
  beast::get_lowest_layer(stream).expires_after(kExchangeTimeout);
  auto [cec, connected] =
      co_await beast::get_lowest_layer(stream).async_connect(endpoints, kAsTuple);
  static_cast<void>(connected);
  if (cec) {
    error = "cannot connect to " + where.host + ":" + where.port + ": " + cec.message();
    co_return std::nullopt;
  }
  if (!tls->prepare(stream.native_handle(), where.host)) {
    error = "cannot verify the name " + where.host;
    co_return std::nullopt;
  }
  auto [hec] = co_await stream.async_handshake(net::ssl::stream_base::client, kAsTuple);
  if (hec) {
    error = "TLS handshake with " + where.host +
            " failed: " + tls::handshake_failure(stream.native_handle(), hec);
    co_return std::nullopt;
  }
  http::request<http::empty_body> req{http::verb::get, where.target, 11};
  req.set(http::field::host, where.port == "443" ? where.host : where.host + ":" + where.port);
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, "sluice");
  auto [wec, written] = co_await http::async_write(stream, req, kAsTuple);
  static_cast<void>(written);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxKeySet);
  auto [ec, read] = wec ? std::tuple(wec, std::size_t{0})
                        : co_await http::async_read(stream, buffer, parser, kAsTuple);
  static_cast<void>(read);
  if (ec) {
    error = "no answer: " + ec.message();
    co_return std::nullopt;
  }
  if (parser.get().result() != http::status::ok) {
    error = "answered " + std::to_string(parser.get().result_int());
    co_return std::nullopt;
  }
  co_return std::move(parser.get().body());
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace sluice::app
