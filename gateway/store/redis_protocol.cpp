// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_protocol.hpp"

#include <hiredis/hiredis.h>

#include <array>
#include <charconv>
#include <new>
#include <stdexcept>

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

void append_header(std::string& out, char kind, std::size_t n) {
  std::array<char, 24> digits{};
  digits[0] = kind;
  const auto end = std::to_chars(digits.data() + 1, digits.data() + digits.size() - 2, n).ptr;
  end[0] = '\r';
  end[1] = '\n';
  out.append(digits.data(), end + 2);
}

}  // namespace

void append_command(std::string& out, std::span<const std::string_view> args) {
  std::size_t size = 16;
  for (const std::string_view arg : args) {
    size += arg.size() + 16;
  }
  out.reserve(out.size() + size);
  append_header(out, '*', args.size());
  for (const std::string_view arg : args) {
    append_header(out, '$', arg.size());
    out.append(arg).append("\r\n");
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

/// hiredis' own reply functions (a reader made with the defaults lends them).
const redisReplyObjectFunctions& default_functions() {
  static const redisReplyObjectFunctions functions = [] {
    redisReader* probe = redisReaderCreate();
    if (probe == nullptr) {
      throw std::bad_alloc();
    }
    const redisReplyObjectFunctions copy = *probe->fn;
    redisReaderFree(probe);
    return copy;
  }();
  return functions;
}

/// hiredis 0.14 allocates an array's announced element count before any element arrives, so
/// "*400000000" from a broken or hostile server would take gigabytes (found by the redis_reply
/// fuzz target). No reply sluice reads comes near kMaxReplyElements; a larger announcement fails
/// the reader ("Out of memory": a protocol error, the connection is dropped).
void* create_bounded_array(const redisReadTask* task, int elements) {
  if (elements > kMaxReplyElements) {
    return nullptr;
  }
  return default_functions().createArray(task, elements);
}

redisReplyObjectFunctions* bounded_functions() {
  static redisReplyObjectFunctions functions = [] {
    redisReplyObjectFunctions f = default_functions();
    f.createArray = &create_bounded_array;
    return f;
  }();
  return &functions;
}

}  // namespace

ReplyReader::ReplyReader() : reader_(redisReaderCreateWithFunctions(bounded_functions())) {
  if (!reader_) {
    throw std::bad_alloc();
  }
}

ReplyReader::~ReplyReader() = default;

void ReplyReader::reset() {
  reader_.reset(redisReaderCreateWithFunctions(bounded_functions()));
  if (!reader_) {
    throw std::bad_alloc();
  }
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
  auto* reply = static_cast<redisReply*>(raw);
  RedisReply out = from_hiredis(*reply);
  freeReplyObject(reply);
  return out;
}

}  // namespace sluice::store
