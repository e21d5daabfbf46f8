// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <mutex>

// A value that readers on any thread take a reference to while one writer replaces it whole.
namespace sluice::core {

/// Holds one `shared_ptr<const T>`: load() hands out the current one, store() replaces it;
/// readers keep what they loaded however often it is replaced. Thread-safe (a mutex around the
/// pointer copy, never held across anything else). Used for what a TLS listener serves and for
/// a certificate's OCSP staple.
template <typename T>
class SharedSlot {
 public:
  SharedSlot() = default;
  explicit SharedSlot(std::shared_ptr<const T> initial) : current_(std::move(initial)) {}

  [[nodiscard]] std::shared_ptr<const T> load() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void store(std::shared_ptr<const T> next) {
    std::lock_guard lock(mutex_);
    current_ = std::move(next);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> current_;
};

}  // namespace sluice::core
