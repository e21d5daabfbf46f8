// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/user_sample_ring.hpp"

#include <bit>
#include <cassert>

namespace sluice::insight {

UserSampleRing::UserSampleRing(std::size_t capacity)
    : slots_(std::make_unique<UserSample[]>(capacity)), mask_(capacity - 1) {
  assert(std::has_single_bit(capacity));
}

}  // namespace sluice::insight
