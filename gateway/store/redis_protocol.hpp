// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;
struct redisReply;

// RESP, the Redis wire protocol: hiredis parses replies; commands are written here (a RESP
// command is an array of length-prefixed strings: hiredis' formatter allocates a buffer and
// prints every length with printf, which the hybrid exchange, one command per key and period,
// paid for on every request); the sockets are ours (Asio). hiredis' reader builds each reply
// directly as a plain value (its object callbacks), not as its own objects to be copied.
namespace sluice::store {

/// One Redis reply as a plain value.
struct RedisReply {
  enum class Type { kString, kArray, kInteger, kNil, kStatus, kError };
  Type type = Type::kNil;
  std::int64_t integer = 0;
  std::string text;  ///< kString, kStatus and kError
  std::vector<RedisReply> elements;

  [[nodiscard]] bool is_error() const noexcept { return type == Type::kError; }
};

/// A hiredis reply object copied into a plain value.
[[nodiscard]] RedisReply from_hiredis(const redisReply& reply);

/// A command as RESP bytes: `format_command({"EVALSHA", sha, "1", key, ...})`.
[[nodiscard]] std::string format_command(const std::vector<std::string_view>& args);
/// Appends a command as RESP bytes to `out` (`*<n>\r\n`, then `$<length>\r\n<arg>\r\n` per
/// argument): what format_command returns, without a string of its own.
void append_command(std::string& out, std::span<const std::string_view> args);
void append_command(std::string& out, std::initializer_list<std::string_view> args);

/// The most elements one RESP array may announce; more is a protocol error (ReplyReader).
inline constexpr int kMaxReplyElements = 1 << 20;

/// Parses a stream of replies fed in arbitrary pieces. Confined to one connection (one thread).
class ReplyReader {
 public:
  ReplyReader();
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  /// Drops everything buffered (a new connection starts a new stream).
  void reset();
  void feed(std::string_view bytes);
  /// The next complete reply, std::nullopt when more bytes are needed. Sets `protocol_error`
  /// (and returns std::nullopt) when the stream is not RESP; the connection must then be reset.
  std::optional<RedisReply> next(bool& protocol_error);

 private:
  struct Free {
    void operator()(redisReader* reader) const noexcept;
  };
  /// The reply being read, built in place by the reader's callbacks (its privdata): declared
  /// before reader_, so it outlives the reader, which may clear an unfinished reply when freed.
  RedisReply building_;
  std::unique_ptr<redisReader, Free> reader_;
};

}  // namespace sluice::store
