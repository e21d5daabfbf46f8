// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "gateway/limiter/policy.hpp"
#include "gateway/limiter/sliding_window.hpp"

namespace sluice::store {

/// A thread's own handle on a store, from LimitStore::attach(): for a networked store, the
/// connection(s) living on that thread's io_context. Every call that may do I/O names the
/// caller's slot, so no thread-local lookup is involved. Cheap to copy.
struct StoreSlot {
  std::uint32_t index = 0;
  friend bool operator==(StoreSlot, StoreSlot) = default;
};

/// Names a policy inside one store. Returned by LimitStore::apply(); cheap to copy, and stable
/// for the life of the store (a removed and re-created policy gets its old id back).
struct PolicyId {
  std::uint32_t index = 0;
  friend bool operator==(PolicyId, PolicyId) = default;
};

/// A type-erased completion handler and the executor it must run on. (Asio 1.81's
/// any_completion_handler alone cannot be posted: its any_completion_executor lacks the
/// blocking.never property that post() requires. An any_io_executor has it.)
template <typename Result>
struct Completion {
  boost::asio::any_io_executor executor;
  boost::asio::any_completion_handler<void(Result)> handler;

  /// Runs the handler with `result` on its executor, never inside the calling function.
  void post(Result result) && {
    boost::asio::post(executor,
                      [h = std::move(handler), result]() mutable { std::move(h)(result); });
  }
};
using DecisionCompletion = Completion<limiter::LimitDecision>;
using InspectCompletion = Completion<limiter::KeyState>;

/// Where limit counts live: one sliding window per (policy, user key). The seam between the data
/// path and the memory (embedded) or Redis (shared) implementation. Asynchronous in shape so a
/// networked store slots in without touching callers:
///   auto d = store.try_decide(slot, id, key);                        // inline, when possible
///   if (!d) { d = co_await store.decide(slot, id, key, token); }
///
/// Lifecycle, the same for every store (the gateway has no branch on the store type):
/// attach() once per thread that decides (each worker, and the control thread) before start();
/// start() when the io_contexts are about to run; tick(slot) about once a second from the
/// control thread (housekeeping: idle keys, heartbeats); stop() after the threads stopped and
/// before the io_contexts are destroyed.
/// try_decide() answers at once when the store can decide without I/O (the memory store always
/// can), so the common case costs no hop through an event loop. The asynchronous form follows
/// Asio's rule: the handler is never invoked inside the initiating call, but through its
/// associated executor. (Asio 1.81's awaitables resume inside an inline-invoked handler, so
/// inline completion there nests one stack frame per decision; Boost 1.82's immediate executors
/// would remove the need for the separate fast path.) Every member is thread-safe.
class LimitStore {
 public:
  virtual ~LimitStore() = default;

  /// A slot for the thread that runs `ioc` (a networked store opens its connections there).
  virtual StoreSlot attach(boost::asio::io_context& ioc) = 0;
  virtual void start() = 0;
  virtual void stop() = 0;
  /// Periodic housekeeping, from the thread of `slot`; the store keeps its own cadences.
  virtual void tick(StoreSlot slot) = 0;

  /// Creates `policy` (by name) or updates it in place. A new `requests` or new overrides apply
  /// to the next decision; a new `window`/`buckets` carries each key's in-window total into the
  /// new window's current bucket (docs/behaviour.md "Precise semantics"), so no key gets a fresh
  /// allowance.
  virtual PolicyId apply(const limiter::Policy& policy) = 0;
  /// Deletes the policy and its counts; false if unknown. Decisions still made through an old
  /// PolicyId admit (the policy no longer exists).
  virtual bool remove(std::string_view name) = 0;
  [[nodiscard]] virtual std::optional<PolicyId> find(std::string_view name) const = 0;

  /// Decides one request of `key` at once and counts it if admitted, when the store can do so
  /// without I/O; nullopt means "use async_decide".
  [[nodiscard]] virtual std::optional<limiter::LimitDecision> try_decide(StoreSlot slot,
                                                                         PolicyId policy,
                                                                         std::string_view key) = 0;
  /// Decides one request of `key` and counts it if admitted. `key` need only live until this
  /// call returns. The handler is invoked exactly once, never inside this call.
  virtual void async_decide(StoreSlot slot, PolicyId policy, std::string_view key,
                            DecisionCompletion completion) = 0;
  /// The state of `key` as the next decision would see it, counting nothing; nullopt means
  /// "use async_inspect".
  [[nodiscard]] virtual std::optional<limiter::KeyState> try_inspect(StoreSlot slot,
                                                                     PolicyId policy,
                                                                     std::string_view key) = 0;
  virtual void async_inspect(StoreSlot slot, PolicyId policy, std::string_view key,
                             InspectCompletion completion) = 0;
  /// Keys currently holding state for the policy (`sluice_ratelimit_tracked_keys`).
  [[nodiscard]] virtual std::size_t tracked_keys(PolicyId policy) const = 0;

  /// Asio-style front ends of async_decide/async_inspect: any completion token. A handler
  /// without an associated executor completes on the system executor (another thread).
  template <typename CompletionToken>
  auto decide(StoreSlot slot, PolicyId policy, std::string_view key, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(limiter::LimitDecision)>(
        [this, slot, policy, key](auto handler) {
          auto executor = completion_executor(handler);
          async_decide(slot, policy, key, {std::move(executor), std::move(handler)});
        },
        token);
  }
  template <typename CompletionToken>
  auto inspect(StoreSlot slot, PolicyId policy, std::string_view key, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(limiter::KeyState)>(
        [this, slot, policy, key](auto handler) {
          auto executor = completion_executor(handler);
          async_inspect(slot, policy, key, {std::move(executor), std::move(handler)});
        },
        token);
  }

 private:
  template <typename Handler>
  static boost::asio::any_io_executor completion_executor(const Handler& handler) {
    return boost::asio::get_associated_executor(handler, boost::asio::system_executor());
  }
};

}  // namespace sluice::store
