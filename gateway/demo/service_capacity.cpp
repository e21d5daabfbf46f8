// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/service_capacity.hpp"

#include <algorithm>
#include <utility>

namespace sluice::demo {

SlotClaim ServiceCapacity::claim(Grant on_grant) {
  const std::lock_guard lock(mutex_);
  const Ticket ticket = next_ticket_++;
  if (closed_) {
    return {*this, SlotClaim::State::kHolding, ticket};  // nothing counts any more
  }
  if (take_free_slot_locked()) {
    return {*this, SlotClaim::State::kHolding, ticket};
  }
  queue_.push_back({ticket, std::move(on_grant)});
  return {*this, SlotClaim::State::kQueued, ticket};
}

std::optional<SlotClaim> ServiceCapacity::try_claim() {
  const std::lock_guard lock(mutex_);
  if (!closed_ && !take_free_slot_locked()) {
    return std::nullopt;
  }
  return SlotClaim(*this, SlotClaim::State::kHolding, next_ticket_++);
}

bool ServiceCapacity::take_free_slot_locked() {
  // A free slot goes to the queue's front first: a newcomer never overtakes a waiter.
  if (!queue_.empty() || (capacity_ != 0 && in_service_ >= capacity_)) {
    return false;
  }
  ++in_service_;
  return true;
}

void ServiceCapacity::set_capacity(unsigned capacity) {
  std::deque<Waiter> granted;
  {
    const std::lock_guard lock(mutex_);
    capacity_ = capacity;
    granted = take_grants_locked();
  }
  run(granted);
}

unsigned ServiceCapacity::capacity() const {
  const std::lock_guard lock(mutex_);
  return capacity_;
}

ServiceLoad ServiceCapacity::load() const {
  const std::lock_guard lock(mutex_);
  return {in_service_, queue_.size()};
}

void ServiceCapacity::close() {
  std::deque<Waiter> dropped;
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    in_service_ = 0;
    dropped.swap(queue_);
  }
  // The grants are destroyed here, outside the lock: they may own their sessions' timers.
}

void ServiceCapacity::release() {
  std::deque<Waiter> granted;
  {
    const std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
    --in_service_;
    granted = take_grants_locked();
  }
  run(granted);
}

bool ServiceCapacity::withdraw(Ticket ticket) {
  Grant dropped;  // destroyed after the lock is released
  const std::lock_guard lock(mutex_);
  if (closed_) {
    return true;
  }
  // Tickets are queued in increasing order, so a binary search finds one among many waiters.
  const auto it = std::lower_bound(queue_.begin(), queue_.end(), ticket,
                                   [](const Waiter& w, Ticket t) { return w.ticket < t; });
  if (it == queue_.end() || it->ticket != ticket) {
    return false;  // granted already: the caller holds a slot
  }
  dropped = std::move(it->on_grant);
  queue_.erase(it);
  return true;
}

std::deque<ServiceCapacity::Waiter> ServiceCapacity::take_grants_locked() {
  std::deque<Waiter> granted;
  while (!queue_.empty() && (capacity_ == 0 || in_service_ < capacity_)) {
    ++in_service_;
    granted.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return granted;
}

void ServiceCapacity::run(std::deque<Waiter>& granted) {
  for (auto& waiter : granted) {
    waiter.on_grant();
  }
}

SlotClaim::SlotClaim(SlotClaim&& other) noexcept
    : capacity_(other.capacity_),
      state_(std::exchange(other.state_, State::kDone)),
      ticket_(other.ticket_) {}

SlotClaim::~SlotClaim() {
  switch (state_) {
    case State::kQueued:
      if (!capacity_->withdraw(ticket_)) {
        capacity_->release();  // the grant raced the withdrawal: give its slot back at once
      }
      break;
    case State::kHolding:
      capacity_->release();
      break;
    case State::kDone:
      break;
  }
}

void SlotClaim::granted() noexcept {
  if (state_ == State::kQueued) {
    state_ = State::kHolding;
  }
}

}  // namespace sluice::demo
