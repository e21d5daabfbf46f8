// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

// The demo backend's overload model (README.md, the demo backend's `capacity`): at most
// `capacity` requests are served at once and the rest wait in one FIFO queue shared by every
// thread, as if the process were one server with `capacity` workers. No I/O: the session waits
// for the grant on its own timer and counts the service time itself.
namespace sluice::demo {

inline constexpr unsigned kMaxCapacity = 100000;

class SlotClaim;

/// How many requests hold a slot and how many wait for one, read together.
struct ServiceLoad {
  std::size_t in_service = 0;
  std::size_t queued = 0;

  friend bool operator==(const ServiceLoad&, const ServiceLoad&) = default;
};

/// The service slots of one backend process and the queue of requests waiting for one.
/// `capacity` 0 means unlimited: every request gets a slot at once and nothing queues (the slots
/// are still counted, so a capacity set later counts the requests already in service).
/// Thread-safe: one mutex, never held while a grant callback runs. Owned by FaultState, which
/// outlives every session and so every SlotClaim.
class ServiceCapacity {
 public:
  /// Called once the request it was queued for holds a slot (a slot already counted as taken),
  /// on the thread of the release() or set_capacity() that handed the slot on, outside the
  /// lock. It must not block; a session posts to its own executor.
  using Grant = std::function<void()>;

  explicit ServiceCapacity(unsigned capacity = 0) : capacity_(capacity) {}
  ServiceCapacity(const ServiceCapacity&) = delete;
  ServiceCapacity& operator=(const ServiceCapacity&) = delete;

  /// A slot at once when one is free and nobody waits (the claim holds it), else a place at the
  /// back of the queue: `on_grant` runs when the claim reaches the front and a slot is free.
  [[nodiscard]] SlotClaim claim(Grant on_grant);
  /// claim()'s first case only, without a grant to build: nullopt when the request must queue.
  [[nodiscard]] std::optional<SlotClaim> try_claim();

  /// Takes effect for the slots handed out next: a lower capacity lets the requests in service
  /// finish and hands no slot on until fewer than `capacity` are in service; a higher one (or 0)
  /// hands slots to the queue's front at once.
  void set_capacity(unsigned capacity);

  [[nodiscard]] unsigned capacity() const;
  [[nodiscard]] ServiceLoad load() const;

  /// Stops the accounting for good (the server is shutting down): the queue is dropped without
  /// a grant, releases and withdrawals do nothing, and a later claim holds a slot at once that
  /// counts for nothing; so destroying the sessions of one thread hands no slot to a session
  /// of another.
  void close();

 private:
  friend class SlotClaim;
  using Ticket = std::uint64_t;
  struct Waiter {
    Ticket ticket;
    Grant on_grant;
  };

  /// Gives up a held slot (SlotClaim's destructor).
  void release();
  /// Drops a queued ticket: true if it was still queued, false if it was granted meanwhile
  /// (its claim then holds a slot to release).
  bool withdraw(Ticket ticket);
  /// Takes a free slot if nobody waits (under the lock).
  bool take_free_slot_locked();
  /// Pops the waiters that get a slot now (under the lock); their grants run after it.
  std::deque<Waiter> take_grants_locked();
  static void run(std::deque<Waiter>& granted);

  mutable std::mutex mutex_;
  unsigned capacity_;
  std::size_t in_service_ = 0;
  std::deque<Waiter> queue_;  // oldest first
  Ticket next_ticket_ = 0;
  bool closed_ = false;
};

/// One request's claim on a slot: queued until its grant arrives (granted()), then holding the
/// slot until destroyed. Destroying a queued claim withdraws it, or releases the slot when the
/// grant raced the withdrawal, so a request abandoned while queued never keeps its place.
/// Move-only; confined to the thread of the request it belongs to. References the
/// ServiceCapacity, which outlives it.
class SlotClaim {
 public:
  SlotClaim(SlotClaim&& other) noexcept;
  SlotClaim& operator=(SlotClaim&&) = delete;
  SlotClaim(const SlotClaim&) = delete;
  SlotClaim& operator=(const SlotClaim&) = delete;
  ~SlotClaim();

  /// True once the claim holds a slot: from claim() on, or after granted().
  [[nodiscard]] bool holds_slot() const noexcept { return state_ == State::kHolding; }
  /// Records that this claim's grant callback has run: it holds its slot from now on.
  void granted() noexcept;

 private:
  friend class ServiceCapacity;
  enum class State { kQueued, kHolding, kDone };
  SlotClaim(ServiceCapacity& capacity, State state, ServiceCapacity::Ticket ticket)
      : capacity_(&capacity), state_(state), ticket_(ticket) {}

  ServiceCapacity* capacity_;
  State state_;
  ServiceCapacity::Ticket ticket_;
};

}  // namespace sluice::demo
