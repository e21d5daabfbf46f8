// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tests/support/http_client.hpp"

namespace sluice::testing {

/// A JSON client for the gateway's admin API on 127.0.0.1:PORT over one keep-alive connection,
/// sending `Authorization: Bearer TOKEN` when a token is given. Throws like HttpClient on I/O
/// failures. Thread-safety: confined to one thread.
class AdminClient {
 public:
  struct Reply {
    unsigned status = 0;
    nlohmann::json body;  ///< the parsed body; null when empty or not JSON
    Response raw;
  };

  explicit AdminClient(std::uint16_t port, std::optional<std::string> token = std::nullopt);

  Reply get(std::string_view path) { return send(http::verb::get, path, {}); }
  Reply put(std::string_view path, const nlohmann::json& body) {
    return send(http::verb::put, path, body.dump());
  }
  /// PUT with the body exactly as given (malformed JSON, huge bodies...).
  Reply put_text(std::string_view path, std::string body) {
    return send(http::verb::put, path, std::move(body));
  }
  Reply post(std::string_view path) { return send(http::verb::post, path, {}); }
  Reply del(std::string_view path) { return send(http::verb::delete_, path, {}); }
  Reply send(http::verb method, std::string_view path, std::string body);

 private:
  HttpClient client_;
  Headers headers_;
};

}  // namespace sluice::testing
