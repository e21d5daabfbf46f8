// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/session/h2_goaways.hpp"

namespace sluice::proxy {
namespace {

constexpr std::array<std::string_view, 15> kNames{"no_error",
                                                  "protocol_error",
                                                  "internal_error",
                                                  "flow_control_error",
                                                  "settings_timeout",
                                                  "stream_closed",
                                                  "frame_size_error",
                                                  "refused_stream",
                                                  "cancel",
                                                  "compression_error",
                                                  "connect_error",
                                                  "enhance_your_calm",
                                                  "inadequate_security",
                                                  "http_1_1_required",
                                                  "unknown"};

}  // namespace

GoawayCounters::GoawayCounters(metrics::Metrics& metrics, std::string_view listener) {
  for (std::size_t i = 0; i < counters_.size(); ++i) {
    counters_[i] = &metrics.http2_goaways(listener, kNames[i]);
  }
}

std::string_view GoawayCounters::name(std::uint32_t error_code) noexcept {
  return kNames[std::min<std::size_t>(error_code, kCodes)];
}

void GoawayCounters::count(std::uint32_t error_code) const {
  counters_[std::min<std::size_t>(error_code, kCodes)]->Increment();
}

}  // namespace sluice::proxy
