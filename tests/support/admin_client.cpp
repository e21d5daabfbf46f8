// SPDX-License-Identifier: Apache-2.0
#include "tests/support/admin_client.hpp"

namespace sluice::testing {

AdminClient::AdminClient(std::uint16_t port, std::optional<std::string> token) : client_(port) {
  headers_.emplace_back("Content-Type", "application/json");
  if (token) {
    headers_.emplace_back("Authorization", "Bearer " + *token);
  }
}

AdminClient::Reply AdminClient::send(http::verb method, std::string_view path, std::string body) {
  Reply reply;
  reply.raw = client_.request(method, path, headers_, std::move(body));
  reply.status = reply.raw.result_int();
  reply.body = nlohmann::json::parse(reply.raw.body(), nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) {
    reply.body = nullptr;
  }
  return reply;
}

}  // namespace sluice::testing
