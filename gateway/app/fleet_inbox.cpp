// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/fleet_inbox.hpp"

#include <iterator>
#include <utility>

namespace sluice::app {

bool FleetInbox::put_version(fleet::FleetVersion version, bool authoritative) {
  const std::lock_guard lock(mutex_);
  const bool was_empty = waiting_.empty();
  waiting_.version = Version{std::move(version), authoritative};
  return was_empty;
}

bool FleetInbox::put_events(std::vector<fleet::FleetEvent> events) {
  const std::lock_guard lock(mutex_);
  const bool was_empty = waiting_.empty();
  waiting_.events.insert(waiting_.events.end(), std::make_move_iterator(events.begin()),
                         std::make_move_iterator(events.end()));
  if (waiting_.events.size() > kMaxEvents) {
    waiting_.events.erase(
        waiting_.events.begin(),
        waiting_.events.begin() + static_cast<std::ptrdiff_t>(waiting_.events.size() - kMaxEvents));
  }
  return was_empty;
}

bool FleetInbox::put_drained(fleet::DrainedEndpoints drained) {
  const std::lock_guard lock(mutex_);
  const bool was_empty = waiting_.empty();
  waiting_.drained = std::move(drained);
  return was_empty;
}

FleetInbox::Deliveries FleetInbox::take() {
  const std::lock_guard lock(mutex_);
  return std::exchange(waiting_, Deliveries{});
}

}  // namespace sluice::app
