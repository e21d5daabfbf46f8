// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::proxy {

/// Caps downstream connections across every worker (`http.max_connections`). A worker reserves
/// a slot BEFORE accepting, so the cap is never exceeded; past it, new connections wait in the
/// kernel's backlog, not accepted (docs/behaviour.md "Connection limit"), until a slot frees and
/// the waiting acceptors are woken. Thread-safe.
class ConnectionGate {
 public:
  explicit ConnectionGate(std::uint32_t max) : max_(max) {}

  /// Takes a slot if one is free.
  [[nodiscard]] bool try_reserve() noexcept;
  /// Frees a slot; wakes the waiting acceptors if the gate was full.
  void release();
  /// A new cap (config reload). Raising it wakes the waiting acceptors.
  void set_max(std::uint32_t max);

  /// Called (on the releasing thread) whenever a slot frees up while the gate was full: post
  /// to your own executor. Register before any traffic.
  void on_slot_freed(std::function<void()> wake);
  /// Forgets every wake-up (before the workers that registered them are destroyed).
  void clear_wakers();

  [[nodiscard]] std::uint32_t active() const noexcept {
    return active_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint32_t max() const noexcept { return max_.load(std::memory_order_relaxed); }
  /// Accepted connections still open (active() also counts slots reserved for an accept).
  [[nodiscard]] std::uint32_t open() const noexcept {
    return open_.load(std::memory_order_relaxed);
  }
  void note_open() noexcept { open_.fetch_add(1, std::memory_order_relaxed); }
  void note_closed() noexcept { open_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  void wake_all();

  std::atomic<std::uint32_t> max_;
  std::atomic<std::uint32_t> active_{0};
  std::atomic<std::uint32_t> open_{0};
  std::mutex wakers_mutex_;
  std::vector<std::function<void()>> wakers_;
};

/// One reserved connection slot, released when destroyed. Move-only.
class ConnectionSlot {
 public:
  explicit ConnectionSlot(ConnectionGate& gate) noexcept : gate_(&gate) {}
  ConnectionSlot(ConnectionSlot&& other) noexcept
      : gate_(std::exchange(other.gate_, nullptr)), open_(std::exchange(other.open_, false)) {}
  ConnectionSlot& operator=(ConnectionSlot&&) = delete;
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;
  ~ConnectionSlot() {
    if (gate_ != nullptr) {
      if (open_) {
        gate_->note_closed();
      }
      gate_->release();
    }
  }
  /// The slot now holds an accepted connection (`sluice_downstream_connections`).
  void accepted() noexcept {
    gate_->note_open();
    open_ = true;
  }

 private:
  ConnectionGate* gate_;
  bool open_ = false;
};

}  // namespace sluice::proxy
