// SPDX-License-Identifier: Apache-2.0
#pragma once

// An HTTP/1.1 request reader that shares no code with sluice: Node's former parser,
// libhttp-parser (Debian's libhttp-parser-dev, built strict), wrapped to record each request of
// one connection as it reads it. The differential fuzz target (request_differential_fuzz.cpp)
// reads what sluice forwards with it (docs/fuzzing.md, "The differential target").

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::fuzz {

/// How a request's body is delimited, as a reader sees it.
enum class BodyKind { kNone, kLength, kChunked };

/// One request as the independent parser read it.
struct ReadRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> fields;  ///< names and values as read
  BodyKind body_kind = BodyKind::kNone;
  std::uint64_t length = 0;  ///< with kLength
  std::string body;          ///< the body's bytes (chunked: without the framing)
  bool complete = false;     ///< the whole message arrived

  /// How many fields are named `name` (any case).
  [[nodiscard]] std::size_t count(std::string_view name) const;
  /// The value of the first field named `name` (any case), or empty.
  [[nodiscard]] std::string value(std::string_view name) const;
};

/// Reads one connection's bytes, as they arrive, into requests. Not thread-safe.
class IndependentParser {
 public:
  IndependentParser();
  ~IndependentParser();
  IndependentParser(const IndependentParser&) = delete;
  IndependentParser& operator=(const IndependentParser&) = delete;

  /// Feeds more of the connection. False once the parser found an error (it then reads no more).
  bool feed(std::string_view bytes);
  /// The parser's error name ("HPE_OK" while none).
  [[nodiscard]] std::string_view error() const;

  /// Every request begun so far, in order; the last may be incomplete.
  [[nodiscard]] const std::vector<ReadRequest>& requests() const noexcept { return requests_; }

  struct State;  ///< libhttp-parser's, behind the callbacks

 private:
  std::unique_ptr<State> state_;
  std::vector<ReadRequest> requests_;
};

}  // namespace sluice::fuzz
