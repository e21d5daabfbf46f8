// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace sluice::http1 {

/// One header field of a parsed head, as views into the buffer the head was parsed from.
struct FieldRef {
  boost::beast::http::field id = boost::beast::http::field::unknown;
  std::string_view name;
  std::string_view value;  ///< without surrounding whitespace
  /// The raw field line, `[line_begin, line_end)` as offsets from the head's first byte, CRLF
  /// included. Forwarding a field untouched means copying these bytes (docs/architecture.md,
  /// "Heads are forwarded as bytes").
  std::uint32_t line_begin = 0;
  std::uint32_t line_end = 0;
  /// False when the line cannot be forwarded as it is (it was folded: `value` then lives in the
  /// parser's own storage and the line is written anew).
  bool raw = true;
};

/// The fields of one head in the order received. Holds up to kInline fields without touching
/// the heap (more than that is rare and spills into a vector). Case-insensitive lookups by name
/// or by Beast's field enum. Not thread-safe; the views live as long as the parsed buffer.
class FieldList {
 public:
  static constexpr std::size_t kInline = 32;

  void clear() noexcept {
    size_ = 0;
    spill_.clear();
  }
  void push_back(const FieldRef& f) {
    if (size_ < kInline) {
      std::construct_at(&inline_.refs[size_], f);
    } else {
      spill_.push_back(f);
    }
    ++size_;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] const FieldRef& operator[](std::size_t i) const noexcept {
    return i < kInline ? inline_.refs[i] : spill_[i - kInline];
  }
  [[nodiscard]] FieldRef& operator[](std::size_t i) noexcept {
    return i < kInline ? inline_.refs[i] : spill_[i - kInline];
  }

  /// The first field with `id` (a known field), or null.
  [[nodiscard]] const FieldRef* find(boost::beast::http::field id) const noexcept {
    for (std::size_t i = 0; i < size_; ++i) {
      if ((*this)[i].id == id) {
        return &(*this)[i];
      }
    }
    return nullptr;
  }
  /// The first field named `name` (any case), or null.
  [[nodiscard]] const FieldRef* find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < size_; ++i) {
      if (boost::beast::iequals((*this)[i].name, name)) {
        return &(*this)[i];
      }
    }
    return nullptr;
  }
  [[nodiscard]] std::size_t count(boost::beast::http::field id) const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      n += (*this)[i].id == id ? 1 : 0;
    }
    return n;
  }
  [[nodiscard]] std::size_t count(std::string_view name) const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      n += boost::beast::iequals((*this)[i].name, name) ? 1 : 0;
    }
    return n;
  }
  /// The value of the first field with `id`, or empty.
  [[nodiscard]] std::string_view value(boost::beast::http::field id) const noexcept {
    const FieldRef* f = find(id);
    return f != nullptr ? f->value : std::string_view{};
  }

 private:
  /// The first kInline fields, left uninitialized until pushed: a parser is made per message,
  /// and writing 32 empty fields (1.8 KiB) at each making is work for nothing
  /// (docs/architecture.md, "One request, one context"). Only `[0, size_)` is ever read.
  union Inline {
    Inline() noexcept {}     // NOLINT(modernize-use-equals-default): must not initialize `refs`
    FieldRef refs[kInline];  // NOLINT(modernize-avoid-c-arrays): a union member, left unset
  };
  Inline inline_;
  std::size_t size_ = 0;
  std::vector<FieldRef> spill_;
};

}  // namespace sluice::http1
