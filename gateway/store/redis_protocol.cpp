// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_protocol.hpp"

#include <hiredis/hiredis.h>

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

std::string format_command(const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const auto arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  char* command = nullptr;
  const int length =
      redisFormatCommandArgv(&command, static_cast<int>(args.size()), argv.data(), lengths.data());
  if (length < 0 || command == nullptr) {
    throw std::bad_alloc();
  }
  std::string out(command, static_cast<std::size_t>(length));
  redisFreeCommand(command);
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
