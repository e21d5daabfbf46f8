// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_protocol.hpp"

#include <hiredis/hiredis.h>

#include <array>
#include <charconv>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

namespace sluice::store {

RedisReply from_hiredis(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.text.assign(r.str, r.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.text.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.text.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) {
        out.elements.push_back(from_hiredis(*r.element[i]));  // NOLINT(*-pointer-arithmetic)
      }
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

namespace {

/// Decimal digits of `n`.
std::size_t digits_of(std::size_t n) {
  std::size_t digits = 1;
  for (; n >= 10; n /= 10) {
    ++digits;
  }
  return digits;
}

/// Writes `KIND N\r\n` at `at`, which has room for it (digits_of(n) + 3 bytes).
char* put_header(char* at, char kind, std::size_t n) {
  *at++ = kind;
  at = std::to_chars(at, at + digits_of(n), n).ptr;
  *at++ = '\r';
  *at++ = '\n';
  return at;
}

}  // namespace

void append_command(std::string& out, std::span<const std::string_view> args) {
  // Sized exactly and written in place: a hybrid exchange writes a few commands per key, and
  // appending piece by piece cost more than the bytes (docs/benchmarks.md, 2026-12-02).
  std::size_t size = digits_of(args.size()) + 3;
  for (const std::string_view arg : args) {
    size += digits_of(arg.size()) + 3 + arg.size() + 2;
  }
  const std::size_t start = out.size();
  out.resize(start + size);
  char* at = out.data() + start;
  at = put_header(at, '*', args.size());
  for (const std::string_view arg : args) {
    at = put_header(at, '$', arg.size());
    if (!arg.empty()) {
      std::memcpy(at, arg.data(), arg.size());
      at += arg.size();
    }
    *at++ = '\r';
    *at++ = '\n';
  }
}

void append_command(std::string& out, std::initializer_list<std::string_view> args) {
  append_command(out, std::span<const std::string_view>(args.begin(), args.size()));
}

std::string format_command(const std::vector<std::string_view>& args) {
  std::string out;
  append_command(out, args);
  return out;
}

void ReplyReader::Free::operator()(redisReader* reader) const noexcept {
  redisReaderFree(reader);
}

namespace {

// The reader builds RedisReply values in place instead of hiredis' reply objects, which would
// then be copied out and freed: one allocation per array (its elements) instead of one object
// per element, an element array and a buffer per string. The reply in progress is the reader's
// own (`ReplyReader::building_`, the reader's privdata, reached through every task); an
// element is a slot of its parent's elements, sized when the array is announced, so pointers
// to the slots stay valid while the array fills. hiredis calls freeObject only on a reply left
// unfinished (a protocol error, or a reader freed mid-reply). The callbacks are C: nothing may
// throw through them, so an allocation that fails is hiredis' "Out of memory" (nullptr).

RedisReply* slot_for(const redisReadTask* task) {
  if (task->parent == nullptr) {
    auto* root = static_cast<RedisReply*>(task->privdata);
    *root = RedisReply{};
    return root;
  }
  auto* parent = static_cast<RedisReply*>(task->parent->obj);
  return &parent->elements[static_cast<std::size_t>(task->idx)];
}

void* create_string(const redisReadTask* task, char* text, std::size_t length) noexcept {
  RedisReply* slot = slot_for(task);
  switch (task->type) {
    case REDIS_REPLY_STATUS:
      slot->type = RedisReply::Type::kStatus;
      break;
    case REDIS_REPLY_ERROR:
      slot->type = RedisReply::Type::kError;
      break;
    default:
      slot->type = RedisReply::Type::kString;
      break;
  }
  try {
    slot->text.assign(text, length);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return slot;
}

/// hiredis 0.14 takes an array's announced element count at its word, so "*400000000" from a
/// broken or hostile server would take gigabytes before any element arrives (found by the
/// redis_reply fuzz target, when the elements were hiredis' own). No reply sluice reads comes
/// near kMaxReplyElements; a larger announcement fails the reader ("Out of memory": a protocol
/// error, the connection is dropped).
void* create_array(const redisReadTask* task, int elements) noexcept {
  if (elements < 0 || elements > kMaxReplyElements) {
    return nullptr;
  }
  RedisReply* slot = slot_for(task);
  slot->type = RedisReply::Type::kArray;
  try {
    slot->elements.resize(static_cast<std::size_t>(elements));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return slot;
}

void* create_integer(const redisReadTask* task, long long value) noexcept {
  RedisReply* slot = slot_for(task);
  slot->type = RedisReply::Type::kInteger;
  slot->integer = value;
  return slot;
}

void* create_nil(const redisReadTask* task) noexcept {
  RedisReply* slot = slot_for(task);
  slot->type = RedisReply::Type::kNil;
  return slot;
}

void free_unfinished(void* reply) noexcept {
  *static_cast<RedisReply*>(reply) = RedisReply{};
}

redisReplyObjectFunctions* in_place_functions() {
  static redisReplyObjectFunctions functions{
      .createString = &create_string,
      .createArray = &create_array,
      .createInteger = &create_integer,
      .createNil = &create_nil,
      .freeObject = &free_unfinished,
  };
  return &functions;
}

}  // namespace

ReplyReader::ReplyReader() : reader_(redisReaderCreateWithFunctions(in_place_functions())) {
  if (!reader_) {
    throw std::bad_alloc();
  }
  reader_->privdata = &building_;  // not redisReaderSetPrivdata: it casts the pointer to int
}

ReplyReader::~ReplyReader() = default;

void ReplyReader::reset() {
  reader_.reset(redisReaderCreateWithFunctions(in_place_functions()));
  if (!reader_) {
    throw std::bad_alloc();
  }
  reader_->privdata = &building_;  // not redisReaderSetPrivdata: it casts the pointer to int
}

void ReplyReader::feed(std::string_view bytes) {
  redisReaderFeed(reader_.get(), bytes.data(), bytes.size());
}

std::optional<RedisReply> ReplyReader::next(bool& protocol_error) {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
    protocol_error = true;
    return std::nullopt;
  }
  if (raw == nullptr) {
    return std::nullopt;
  }
  // The reply was built in building_ (in_place_functions); the next one starts afresh there.
  RedisReply out = std::move(*static_cast<RedisReply*>(raw));
  return out;
}

}  // namespace sluice::store
