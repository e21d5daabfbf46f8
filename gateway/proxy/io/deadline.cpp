// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/io/deadline.hpp"

#include <algorithm>

namespace sluice::proxy {

using namespace std::chrono_literals;

DeadlineSweep::DeadlineSweep(const Executor& executor, const core::Clock& clock)
    : clock_(clock), timer_(executor) {}

DeadlineSweep::~DeadlineSweep() {
  deadlines_.clear();  // auto_unlink hooks: leaves any deadline still alive unlinked
}

core::Duration DeadlineSweep::tick_for(core::Duration smallest_timeout) noexcept {
  return std::clamp<core::Duration>(smallest_timeout / 8, 5ms, 250ms);
}

void DeadlineSweep::start(core::Duration tick) {
  tick_ = tick;
  if (!running_) {
    running_ = true;
    schedule();
  }
}

void DeadlineSweep::stop() {
  running_ = false;
  boost::system::error_code ignored;
  timer_.cancel(ignored);
}

void DeadlineSweep::schedule() {
  timer_.expires_after(tick_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !running_) {
      return;
    }
    sweep(clock_.now());
    schedule();
  });
}

std::size_t DeadlineSweep::sweep(core::TimePoint now) {
  std::size_t fired = 0;
  // fire() cancels I/O, whose completions run later through the io_context: no deadline is
  // destroyed or linked while this loop runs.
  for (Deadline& d : deadlines_) {
    if (d.armed_ && d.at_ <= now) {
      d.fire();
      ++fired;
    }
  }
  return fired;
}

}  // namespace sluice::proxy
