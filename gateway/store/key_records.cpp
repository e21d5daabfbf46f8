// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/key_records.hpp"

#include <utility>

namespace sluice::store {

KeyRecords::KeyRecords(KeyRecords&& other) noexcept
    : shape_(other.shape_),
      table_(std::move(other.table_)),
      block_bytes_(std::exchange(other.block_bytes_, 0)) {}

KeyRecords& KeyRecords::operator=(KeyRecords&& other) noexcept {
  if (this != &other) {
    release_all();
    shape_ = other.shape_;
    table_ = std::move(other.table_);
    block_bytes_ = std::exchange(other.block_bytes_, 0);
  }
  return *this;
}

void KeyRecords::release(std::byte* record) noexcept {
  ring(record).release();
}

void KeyRecords::erase_slot(std::size_t slot) noexcept {
  release(table_.record_at(slot));
  table_.erase_slot(slot);
}

void KeyRecords::clear() noexcept {
  release_all();
  table_.clear();
}

void KeyRecords::release_all() noexcept {
  if (block_bytes_ == 0) {
    return;  // no key holds a block: nothing to walk
  }
  for (std::size_t i = 0; i < table_.capacity(); ++i) {
    if (table_.key_at(i) != 0) {
      release(table_.record_at(i));
    }
  }
}

}  // namespace sluice::store
