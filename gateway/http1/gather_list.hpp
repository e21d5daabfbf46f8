// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/container/small_vector.hpp>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace sluice::http1 {

/// The pieces of one outgoing write: views of bytes that already exist (the original head's
/// lines, body bytes in a read buffer) and short generated text (a status line, an added field,
/// a chunk size) kept in an arena of its own, so a whole head plus a small body leaves in one
/// gather write without being copied together. An Asio ConstBufferSequence.
///
/// Pieces must outlive the write; the arena's bytes never move (text that does not fit the
/// fixed arena goes to stable overflow blocks). Typical heads need neither the heap nor more
/// than kInlineBuffers pieces. Not thread-safe.
class GatherList {
 public:
  static constexpr std::size_t kInlineBuffers = 40;
  static constexpr std::size_t kArenaSize = 768;
  using Buffers = boost::container::small_vector<boost::asio::const_buffer, kInlineBuffers>;

  GatherList() = default;
  GatherList(const GatherList&) = delete;
  GatherList& operator=(const GatherList&) = delete;

  void clear() noexcept {
    buffers_.clear();
    used_ = 0;
    bytes_ = 0;
    overflow_.clear();
  }

  /// Adds a view of bytes that outlive the write. Adjacent views of contiguous memory merge.
  void add(std::string_view s) {
    if (s.empty()) {
      return;
    }
    bytes_ += s.size();
    if (!buffers_.empty()) {
      auto& last = buffers_.back();
      if (static_cast<const char*>(last.data()) + last.size() == s.data()) {
        last = boost::asio::const_buffer(last.data(), last.size() + s.size());
        return;
      }
    }
    buffers_.emplace_back(s.data(), s.size());
  }
  /// Copies `s` into the arena and adds it.
  void add_copy(std::string_view s) { add(store(s)); }
  /// Adds `n` in decimal.
  void add_decimal(std::uint64_t n) {
    std::array<char, 20> digits{};
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), n).ptr;
    add_copy({digits.data(), static_cast<std::size_t>(end - digits.data())});
  }
  /// Adds `n` in lower-case hexadecimal (a chunk size).
  void add_hex(std::uint64_t n) {
    std::array<char, 16> digits{};
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), n, 16).ptr;
    add_copy({digits.data(), static_cast<std::size_t>(end - digits.data())});
  }

  /// Copies `s` into the arena; the view stays valid until clear().
  std::string_view store(std::string_view s) {
    if (s.size() <= kArenaSize - used_) {
      char* at = arena_.data() + used_;
      s.copy(at, s.size());
      used_ += s.size();
      return {at, s.size()};
    }
    return overflow_.emplace_back(s);
  }

  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] bool empty() const noexcept { return buffers_.empty(); }
  [[nodiscard]] const Buffers& buffers() const noexcept { return buffers_; }
  [[nodiscard]] auto begin() const noexcept { return buffers_.begin(); }
  [[nodiscard]] auto end() const noexcept { return buffers_.end(); }

  /// The bytes as one string (tests and diagnostics).
  [[nodiscard]] std::string str() const {
    std::string out;
    out.reserve(bytes_);
    for (const auto& b : buffers_) {
      out.append(static_cast<const char*>(b.data()), b.size());
    }
    return out;
  }

 private:
  Buffers buffers_;
  std::array<char, kArenaSize> arena_{};
  std::size_t used_ = 0;
  std::size_t bytes_ = 0;
  std::deque<std::string> overflow_;  // std::deque never moves its elements
};

}  // namespace sluice::http1
