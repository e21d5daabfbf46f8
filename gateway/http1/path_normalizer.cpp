// SPDX-License-Identifier: Apache-2.0
// Request-path normalization (docs/paths.md). Most paths are already normal, so scan() reads the
// path once without writing, 8 bytes at a time where nothing can need a change, and stops at the
// first thing that must change; only then does rewrite() build the normal form in the caller's
// string.
#include "gateway/http1/path_normalizer.hpp"

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sluice::http1 {

int hex_digit_value(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;
}

namespace {

constexpr std::string_view kUpperHex = "0123456789ABCDEF";

constexpr bool is_lower_hex(char c) {
  return c >= 'a' && c <= 'f';
}

// RFC 3986 §2.3: percent-encodings of these are equivalent to the characters themselves, so
// they are decoded (§6.2.2.2). Every other octet keeps its encoding: decoding "/", "\" or NUL
// would change which segments a backend sees.
constexpr bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// The percent-encoding "%XY" at path[at] (where path[at] == '%').
struct Escape {
  bool is_valid = false;
  bool is_lower_case = false;  // either digit is a-f: §6.2.2.1 wants A-F
  unsigned char octet = 0;
};

Escape read_escape(std::string_view path, std::size_t at) {
  if (path.size() - at < 3) {
    return {};
  }
  const int high = hex_digit_value(path[at + 1]);
  const int low = hex_digit_value(path[at + 2]);
  if (high < 0 || low < 0) {
    return {};
  }
  return {true, is_lower_hex(path[at + 1]) || is_lower_hex(path[at + 2]),
          static_cast<unsigned char>(high * 16 + low)};
}

bool has_bad_escape(std::string_view path) {
  for (auto at = path.find('%'); at != std::string_view::npos; at = path.find('%', at + 3)) {
    if (!read_escape(path, at).is_valid) {
      return true;
    }
  }
  return false;
}

constexpr std::size_t kWord = sizeof(std::uint64_t);
constexpr std::uint64_t kOnes = 0x0101010101010101U;
constexpr std::uint64_t kHighs = 0x8080808080808080U;

// Sets the high bit of every byte of `word` that equals `c`. A borrow may also set it in a byte
// above one that does, never otherwise, so the result is non-zero exactly when some byte equals
// `c` ("Determine if a word has a byte equal to n", Sean Eron Anderson's Bit Twiddling Hacks).
constexpr std::uint64_t equal_bytes(std::uint64_t word, char c) {
  const std::uint64_t x = word ^ (kOnes * static_cast<unsigned char>(c));
  return (x - kOnes) & ~x & kHighs;
}

// False when none of the 8 bytes at path[at] (fewer at the end) is a "%" or a "/" followed by
// "." or "/": nothing there can need a change. True may be a false alarm; scan() then looks at
// the bytes one by one. Byte lanes line up with memory in either byte order.
bool may_need_change(std::string_view path, std::size_t at) {
  std::uint64_t word = 0;
  std::uint64_t next = 0;
  if (path.size() - at > kWord) {
    std::memcpy(&word, path.data() + at, kWord);
    std::memcpy(&next, path.data() + at + 1, kWord);
  } else {  // the last 8 bytes or fewer, padded with NULs: never "%", "/" or "."
    std::array<char, kWord + 1> tail{};
    std::memcpy(tail.data(), path.data() + at, path.size() - at);
    std::memcpy(&word, tail.data(), kWord);
    std::memcpy(&next, tail.data() + 1, kWord);
  }
  const std::uint64_t dot_or_slash_next = equal_bytes(next, '.') | equal_bytes(next, '/');
  return ((equal_bytes(word, '/') & dot_or_slash_next) | equal_bytes(word, '%')) != 0;
}

// What scan() makes of the "/" or "%" at path[at]: kUnchanged (nothing to change here; go on at
// `next`), kRewritten (something must change) or kBadEncoding.
struct Step {
  PathStatus status = PathStatus::kUnchanged;
  std::size_t next = 0;
};

Step inspect(std::string_view path, std::size_t at, bool merge_slashes) {
  if (path[at] == '%') {
    const auto escape = read_escape(path, at);
    if (!escape.is_valid) {
      return {PathStatus::kBadEncoding};
    }
    if (escape.is_lower_case || is_unreserved(escape.octet)) {
      return {PathStatus::kRewritten};
    }
    return {PathStatus::kUnchanged, at + 3};
  }
  // A "/": does an empty (but not the last), "." or ".." segment follow?
  const auto rest = path.substr(at + 1);
  const std::size_t dots = rest.starts_with("..") ? 2 : rest.starts_with('.') ? 1 : 0;
  const bool must_change =
      dots == 0 ? merge_slashes && rest.starts_with('/') : rest.size() == dots || rest[dots] == '/';
  return {must_change ? PathStatus::kRewritten : PathStatus::kUnchanged, at + 1};
}

// One pass, no writes. kUnchanged when the path is already normal; kBadEncoding when it does not
// start with "/" or has a bad escape before the first thing that must change; kRewritten as soon
// as something must change (rewrite() then checks the rest).
PathStatus scan(std::string_view path, bool merge_slashes) {
  if (path.empty() || path.front() != '/') {
    return PathStatus::kBadEncoding;
  }
  for (std::size_t at = 0; at < path.size();) {
    if (!may_need_change(path, at)) {
      at += kWord;  // past the end at the end: the loop stops
      continue;
    }
    if (path[at] != '/' && path[at] != '%') {
      ++at;
      continue;
    }
    const auto step = inspect(path, at, merge_slashes);
    if (step.status != PathStatus::kUnchanged) {
      return step.status;
    }
    at = step.next;
  }
  return PathStatus::kUnchanged;
}

// The normal form under construction: the caller's string, sized once to the path's length (the
// normal form is never longer) and written through a pointer, which keeps size checks and
// reallocation out of the per-character loop. `size` is the part in use.
struct Output {
  char* data = nullptr;
  std::size_t size = 0;

  void put(char c) { data[size++] = c; }
  [[nodiscard]] std::string_view text() const { return {data, size}; }
};

// Appends the segment that starts at path[at] to `out`, decoding as step 1 says. Returns where
// the segment ends (a "/" or path.size()), or npos at a bad escape.
std::size_t append_segment(std::string_view path, std::size_t at, Output& out) {
  for (; at < path.size() && path[at] != '/'; ++at) {
    if (path[at] != '%') {
      out.put(path[at]);
      continue;
    }
    const auto escape = read_escape(path, at);
    if (!escape.is_valid) {
      return std::string_view::npos;
    }
    if (is_unreserved(escape.octet)) {
      out.put(static_cast<char>(escape.octet));
    } else {
      out.put('%');
      out.put(kUpperHex[escape.octet >> 4U]);
      out.put(kUpperHex[escape.octet & 0xFU]);
    }
    at += 2;
  }
  return at;
}

// Builds the normal form segment by segment. The output is the output buffer of RFC 3986
// §5.2.4 ("/" + segment for every segment kept so far), so ".." pops back to the previous "/"
// (no segment holds a literal "/": %2F stays encoded). Each segment is decoded before the dot
// and empty-segment checks, so "%2E%2E" is "..", and steps 1-3 happen in one pass.
PathStatus rewrite(std::string_view path, bool merge_slashes, Output& out) {
  for (std::size_t at = 1;; ++at) {  // `at`: the first character after a "/"
    const std::size_t start = out.size;
    out.put('/');
    at = append_segment(path, at, out);
    if (at == std::string_view::npos) {
      return PathStatus::kBadEncoding;
    }
    const bool is_last = at == path.size();
    const std::string_view segment = out.text().substr(start + 1);
    const bool is_up = segment == "..";
    if (is_up || segment == "." || (merge_slashes && segment.empty() && !is_last)) {
      out.size = start;
      if (is_up) {
        if (out.size == 0) {
          // RFC 3986 would drop the "..". We refuse instead: docs/paths.md, "What is refused".
          // A bad escape later in the path still wins, as step 1 precedes step 3.
          return has_bad_escape(path.substr(at)) ? PathStatus::kBadEncoding
                                                 : PathStatus::kAboveRoot;
        }
        out.size = out.text().rfind('/');
      }
      if (is_last) {
        out.put('/');  // "/a/." and "/a/b/.." become "/a/", as in §5.2.4
      }
    }
    if (is_last) {
      return PathStatus::kRewritten;
    }
  }
}

PathStatus rewrite(std::string_view path, bool merge_slashes, std::string& out) {
  out.resize(path.size());  // the capacity stays: no allocation once it has grown to fit
  Output output{out.data(), 0};
  const auto status = rewrite(path, merge_slashes, output);
  out.resize(output.size);
  assert(status != PathStatus::kRewritten || (out.size() <= path.size() && out != path));
  return status;
}

}  // namespace

PathStatus normalize_path(std::string_view path, bool merge_slashes, std::string& out) {
  const auto status = scan(path, merge_slashes);
  return status == PathStatus::kRewritten ? rewrite(path, merge_slashes, out) : status;
}

std::string_view to_string(PathStatus status) {
  switch (status) {
    case PathStatus::kUnchanged:
      return "unchanged";
    case PathStatus::kRewritten:
      return "rewritten";
    case PathStatus::kAboveRoot:
      return "above_root";
    case PathStatus::kBadEncoding:
      return "bad_encoding";
  }
  return "unknown";
}

std::string normalized(std::string_view path, bool merge_slashes) {
  std::string out;
  switch (normalize_path(path, merge_slashes, out)) {
    case PathStatus::kUnchanged:
      return std::string(path);
    case PathStatus::kRewritten:
      return out;
    case PathStatus::kAboveRoot:
    case PathStatus::kBadEncoding:
      break;
  }
  return {};
}

}  // namespace sluice::http1
