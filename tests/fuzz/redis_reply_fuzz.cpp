// SPDX-License-Identifier: Apache-2.0
// RESP replies as they arrive from Redis (in two reads: the first byte says where the input is
// cut), and what the store reads out of each: the limit script's decision and key state, the
// cluster's slot map, a MOVED/ASK redirect.
#include <cstddef>
#include <string_view>

#include "gateway/store/redis_cluster_map.hpp"
#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_protocol.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {
namespace {

void read_reply(const store::RedisReply& reply) {
  // Every key of a batch the reply's size could answer (five integers per key).
  const std::size_t count = reply.elements.size() / 5;
  for (std::size_t i = 0; i < count + 1; ++i) {
    (void)store::decision_from(reply, i, count);
    (void)store::state_from(reply, i, count);
  }
  if (const auto slots = store::parse_cluster_slots(reply)) {
    for (const auto& range : *slots) {
      SLUICE_FUZZ_CHECK(range.first <= range.last && range.last < store::kClusterSlots);
    }
  }
  if (reply.is_error()) {
    if (const auto redirect = store::parse_redirect(reply.text)) {
      SLUICE_FUZZ_CHECK(redirect->slot < store::kClusterSlots);
    }
  }
}

}  // namespace

int redis_reply(Input input) {
  if (input.empty()) {
    return 0;
  }
  const std::string_view bytes = text_of(input.subspan(1));
  const std::size_t cut = bytes.empty() ? 0 : input[0] % (bytes.size() + 1);
  store::ReplyReader reader;
  bool protocol_error = false;
  for (const std::string_view part : {bytes.substr(0, cut), bytes.substr(cut)}) {
    reader.feed(part);
    while (auto reply = reader.next(protocol_error)) {
      read_reply(*reply);
    }
    if (protocol_error) {
      break;
    }
  }
  return 0;
}

}  // namespace sluice::fuzz
