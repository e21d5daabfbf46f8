// SPDX-License-Identifier: Apache-2.0
#include "tests/fuzz/fuzz_world.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/write.hpp>
#include <chrono>

#include "gateway/proxy/session/h2_session.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {

using nlohmann::json;

json http_fuzz_config() {
  const json methods = json::array({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"});
  return {
      {"access_log", {{"enabled", false}}},
      {"http",
       {{"max_header_bytes", 4096},
        {"max_body_bytes", 65536},
        {"trusted_proxies", json::array({"192.0.2.0/24"})},
        {"request_id", "trusted"}}},
      {"identity",
       json::array({{{"header", "X-API-Key"}}, {{"bearer", true}}, {{"client_ip", true}}})},
      {"limits", {{"p", {{"requests", 2}, {"window_ms", 10000}, {"buckets", 10}}}}},
      {"overrides", {{"p", {{"vip", {{"requests", 5}}}}}}},
      {"backends",
       {{"b",
         {{"endpoints", json::array({"10.0.0.1:80", "10.0.0.2:80"})},
          {"timeout_ms", 1000},
          {"breaker", {{"enabled", true}}},
          {"outlier", json::object()},
          {"retry", json::object()}}}}},
      {"routes", json::array({
                     {{"name", "ws"}, {"prefix", "/ws"}, {"backend", "b"}, {"upgrades", true}},
                     {{"name", "api"},
                      {"prefix", "/api"},
                      {"backend", "b"},
                      {"limit", "p"},
                      {"methods", methods},
                      {"strip_prefix", true}},
                     {{"name", "vhost"}, {"host", "h.example"}, {"prefix", "/"}, {"backend", "b"}},
                     {{"name", "all"}, {"prefix", "/"}, {"backend", "b"}},
                 })},
  };
}

std::unique_ptr<testing::ProxyWorld> make_http_world() {
  // Parsing the config is the same for every input: once, then copied into each world.
  static const json config = http_fuzz_config();
  return std::make_unique<testing::ProxyWorld>(config);
}

void queue_upstream_answers(testing::ProxyWorld& world) {
  constexpr std::string_view kAnswers[] = {
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n0\r\nT: 1\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n",
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nws",
      "HTTP/1.0 200 OK\r\n\r\nuntil the close",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nc",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
  };
  for (const auto answer : kAnswers) {
    world.connector.responses.emplace_back(answer);
  }
}

namespace {

/// The session for the client's end, HTTP/1.1 or HTTP/2 as the listener would choose.
proxy::Task<void> serve(testing::ProxyWorld& world, testing::TestStream down, bool http2) {
  proxy::Peer peer{boost::asio::ip::make_address("192.0.2.7"), "192.0.2.7"};
  if (http2) {
    co_await proxy::run_h2_session(std::move(down), std::move(peer), http2::Settings{}, world.env,
                                   world.upstream, proxy::ConnectionSlot(world.gate),
                                   world.clock.now());
  } else {
    co_await proxy::run_session(std::move(down), std::move(peer), world.env, world.upstream,
                                proxy::ConnectionSlot(world.gate));
  }
}

}  // namespace

void run_client(testing::ProxyWorld& world, std::string_view bytes, bool http2) {
  testing::TestStream client(world.ioc.get_executor());
  testing::TestStream down(world.ioc.get_executor());
  client.connect(down);
  boost::asio::co_spawn(world.ioc, serve(world, std::move(down), http2),
                        [](const std::exception_ptr& escaped) {
                          // The session handles every error itself: nothing may escape it.
                          SLUICE_FUZZ_CHECK(!escaped);
                        });
  world.run();
  boost::asio::write(client, boost::asio::buffer(bytes.data(), bytes.size()));
  world.run();
  // Every timeout fires (header, idle, upstream): the paths a stalled peer takes.
  world.advance(std::chrono::minutes(2));
  client.close();
  world.run();
}

}  // namespace sluice::fuzz
