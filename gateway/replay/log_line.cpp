// SPDX-License-Identifier: Apache-2.0
#include "gateway/replay/log_line.hpp"

#include <array>

namespace sluice::replay {
namespace {

/// The fields a replay needs, as bits of a mask.
enum LineField : unsigned {
  kLineTs = 1U << 0U,
  kLineRoute = 1U << 1U,
  kLineUser = 1U << 2U,
  kLineLimit = 1U << 3U,
  kLineMethod = 1U << 4U,
  kLinePath = 1U << 5U,
  kLineHost = 1U << 6U,
  kLineOther = 0,
};
constexpr unsigned kLineAllFields = (1U << 7U) - 1;
/// Longer numbers go to nlohmann, which refuses a number whose value overflows a double.
constexpr std::size_t kScanMaxNumber = 24;

/// Bytes a string holds as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> kLinePlain = [] {
  std::array<bool, 256> plain{};
  for (std::size_t c = 0x20; c < 0x80; ++c) {
    plain[c] = c != '"' && c != '\\';
  }
  return plain;
}();

LineField line_field_of(std::string_view key) noexcept {
  switch (key.size()) {  // most keys are none of ours: one length test rules them out
    case 2:
      return key == "ts" ? kLineTs : kLineOther;
    case 4:
      if (key == "user") {
        return kLineUser;
      }
      if (key == "path") {
        return kLinePath;
      }
      return key == "host" ? kLineHost : kLineOther;
    case 5:
      if (key == "route") {
        return kLineRoute;
      }
      return key == "limit" ? kLineLimit : kLineOther;
    case 6:
      return key == "method" ? kLineMethod : kLineOther;
    default:
      return kLineOther;
  }
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

/// A cursor over one line for the fast scan (RFC 8259's grammar, restricted as
/// scan_log_line() says).
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : s_(text) {}

  void skip_ws() noexcept {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) {
      ++i_;
    }
  }
  bool eat(char c) noexcept {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  [[nodiscard]] char peek() const noexcept { return i_ < s_.size() ? s_[i_] : '\0'; }
  [[nodiscard]] bool at_end() const noexcept { return i_ == s_.size(); }

  /// A string at the cursor: its raw content (escapes undecoded); `escaped` when it has one.
  /// False when it is not valid JSON, not ASCII, or holds a surrogate escape.
  bool string(std::string_view& raw, bool& escaped) noexcept {
    if (!eat('"')) {
      return false;
    }
    const std::size_t start = i_;
    while (i_ < s_.size()) {
      // Locals, not members, in the hot loop: a store to i_ could alias the chars read.
      const char* p = s_.data() + i_;
      const char* const end = s_.data() + s_.size();
      while (p != end && kLinePlain[static_cast<unsigned char>(*p)]) {
        ++p;
      }
      i_ = static_cast<std::size_t>(p - s_.data());
      if (p == end) {
        return false;
      }
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        raw = s_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (c < 0x20 || c >= 0x80) {
        return false;
      }
      escaped = true;  // a backslash: everything else is refused above
      if (!escape()) {
        return false;
      }
    }
    return false;
  }

  /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, at most kScanMaxNumber characters.
  bool number() noexcept {
    const std::size_t start = i_;
    eat('-');
    if (!eat('0')) {
      if (!digit()) {
        return false;
      }
      while (digit()) {
      }
    }
    if (eat('.')) {
      if (!digit()) {
        return false;
      }
      while (digit()) {
      }
    }
    return i_ - start <= kScanMaxNumber && peek() != 'e' && peek() != 'E';
  }

  bool literal(std::string_view word) noexcept {
    if (s_.substr(i_, word.size()) != word) {
      return false;
    }
    i_ += word.size();
    return true;
  }

 private:
  bool digit() noexcept { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' && (++i_, true); }

  /// The escape at the cursor (a backslash and what follows).
  bool escape() noexcept {
    if (i_ + 1 >= s_.size()) {
      return false;
    }
    const char e = s_[i_ + 1];
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
        e == 't') {
      i_ += 2;
      return true;
    }
    if (e != 'u' || i_ + 6 > s_.size()) {
      return false;
    }
    unsigned value = 0;
    for (std::size_t k = 2; k < 6; ++k) {
      const int h = hex_value(s_[i_ + k]);
      if (h < 0) {
        return false;
      }
      value = value * 16 + static_cast<unsigned>(h);
    }
    i_ += 6;
    return value < 0xd800 || value > 0xdfff;  // surrogate pairs: nlohmann's business
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

/// Any value the fast scan accepts for a field it does not need.
bool skip_line_value(LineCursor& cursor) noexcept {
  switch (cursor.peek()) {
    case '"': {
      std::string_view raw;
      bool escaped = false;
      return cursor.string(raw, escaped);
    }
    case 't':
      return cursor.literal("true");
    case 'f':
      return cursor.literal("false");
    case 'n':
      return cursor.literal("null");
    default:
      return cursor.number();
  }
}

/// The value of a needed field: an unescaped string, or null where `nullable`.
bool scan_needed(LineCursor& cursor, bool nullable, std::optional<std::string_view>& out) noexcept {
  if (nullable && cursor.peek() == 'n') {
    out.reset();
    return cursor.literal("null");
  }
  std::string_view raw;
  bool escaped = false;
  if (!cursor.string(raw, escaped) || escaped) {
    return false;
  }
  out = raw;
  return true;
}

bool scan_line_value(LineCursor& cursor, LineField field, LogLine& out) noexcept {
  if (field == kLineOther) {
    return skip_line_value(cursor);
  }
  std::optional<std::string_view> value;
  if (!scan_needed(cursor, field == kLineUser || field == kLineHost, value)) {
    return false;
  }
  switch (field) {
    case kLineUser:
      out.user = value;
      return true;
    case kLineHost:
      out.host = value;
      return true;
    case kLineTs:
      out.ts = *value;
      return true;
    case kLineRoute:
      out.route = *value;
      return true;
    case kLineLimit:
      out.limit = *value;
      return true;
    case kLineMethod:
      out.method = *value;
      return true;
    case kLinePath:
      out.path = *value;
      return true;
    case kLineOther:
      break;
  }
  return false;
}

/// `doc[name]` as a string view; nullopt when missing or null. Sets `reason` (unless it holds
/// an earlier one) when the field is missing but `required`, or neither a string nor an
/// allowed null.
std::optional<std::string_view> json_field(const nlohmann::json& doc, const char* name,
                                           bool nullable, bool required, std::string& reason) {
  const auto it = doc.find(name);
  if (it == doc.end()) {
    if (required && reason.empty()) {
      reason = std::string("no \"") + name + "\" field";
    }
    return std::nullopt;
  }
  if (it->is_string()) {
    return std::string_view(it->get_ref<const std::string&>());
  }
  if (!(nullable && it->is_null()) && reason.empty()) {
    reason = std::string("\"") + name + "\" is not a string";
  }
  return std::nullopt;
}

}  // namespace

bool scan_log_line(std::string_view line, LogLine& out) noexcept {
  LineCursor cursor(line);
  cursor.skip_ws();
  if (!cursor.eat('{')) {
    return false;
  }
  cursor.skip_ws();
  unsigned seen = 0;
  while (cursor.peek() == '"') {
    std::string_view key;
    bool escaped = false;
    if (!cursor.string(key, escaped) || escaped) {
      return false;  // an escaped key could spell a needed one
    }
    cursor.skip_ws();
    if (!cursor.eat(':')) {
      return false;
    }
    cursor.skip_ws();
    const LineField field = line_field_of(key);
    if ((seen & field) != 0 || !scan_line_value(cursor, field, out)) {
      return false;  // a repeated needed field: nlohmann keeps the last, let it decide
    }
    seen |= field;
    cursor.skip_ws();
    if (!cursor.eat(',')) {
      break;
    }
    cursor.skip_ws();
    if (cursor.peek() != '"') {
      return false;  // a trailing comma
    }
  }
  if (!cursor.eat('}')) {
    return false;
  }
  cursor.skip_ws();
  return cursor.at_end() && seen == kLineAllFields;
}

std::string parse_log_line_json(std::string_view line, nlohmann::json& doc, LogLine& out) {
  doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return "not valid JSON";
  }
  if (!doc.is_object()) {
    return "not a JSON object";
  }
  out = LogLine{};
  std::string reason;
  const auto ts = json_field(doc, "ts", false, true, reason);
  const auto route = json_field(doc, "route", false, true, reason);
  const auto limit = json_field(doc, "limit", false, true, reason);
  if (!doc.contains("user") && reason.empty()) {
    reason = "no \"user\" field";
  }
  out.user = json_field(doc, "user", true, false, reason);
  out.method = json_field(doc, "method", false, false, reason).value_or("");
  out.path = json_field(doc, "path", false, false, reason).value_or("");
  out.host = json_field(doc, "host", true, false, reason);
  if (reason.empty()) {
    out.ts = *ts;
    out.route = *route;
    out.limit = *limit;
  }
  return reason;
}

}  // namespace sluice::replay
