// SPDX-License-Identifier: Apache-2.0
#include "gateway/http2/response_translator.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

namespace sluice::http2 {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::uint32_t kHeaderLimit = 1U << 20;  // the data path already bounded the head

char lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Whether `name` (lowercase) is listed in a Connection value.
bool named_in(std::string_view connection, std::string_view name) {
  while (!connection.empty()) {
    const std::size_t comma = connection.find(',');
    std::string_view token = connection.substr(0, comma);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) {
      token.remove_prefix(1);
    }
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) {
      token.remove_suffix(1);
    }
    if (beast::iequals(token, name)) {
      return true;
    }
    connection =
        comma == std::string_view::npos ? std::string_view() : connection.substr(comma + 1);
  }
  return false;
}

}  // namespace

// ---- FieldBlock -------------------------------------------------------------------------------

void FieldBlock::add(std::string_view name, std::string_view value) {
  const auto at = static_cast<std::uint32_t>(bytes_.size());
  bytes_.resize(bytes_.size() + name.size() + value.size());
  char* out = bytes_.data() + at;
  out = std::transform(name.begin(), name.end(), out, lower);
  std::copy(value.begin(), value.end(), out);
  spans_.push_back({at, static_cast<std::uint32_t>(name.size()),
                    static_cast<std::uint32_t>(value.size()), false});
}

void FieldBlock::drop_connection_specific() {
  for (std::size_t i = 0; i < size(); ++i) {
    if (name(i) != "connection") {
      continue;
    }
    spans_[i].dropped = true;
    const std::string_view listed = value(i);
    for (std::size_t j = 0; j < size(); ++j) {
      if (named_in(listed, name(j))) {
        spans_[j].dropped = true;
      }
    }
  }
  for (std::size_t i = 0; i < size(); ++i) {
    const std::string_view n = name(i);
    if (n == "keep-alive" || n == "proxy-connection" || n == "transfer-encoding" ||
        n == "upgrade" || n == "te") {
      spans_[i].dropped = true;
    }
  }
}

bool FieldBlock::empty() const noexcept {
  for (const Span& s : spans_) {
    if (!s.dropped) {
      return false;
    }
  }
  return true;
}

FieldVector FieldBlock::to_vector() const {
  FieldVector out;
  for (std::size_t i = 0; i < size(); ++i) {
    if (!dropped(i)) {
      out.emplace_back(std::string(name(i)), std::string(value(i)));
    }
  }
  return out;
}

// ---- Parser -----------------------------------------------------------------------------------

ResponseTranslator::Parser::Parser(ResponseTranslator& owner, bool head_request) : owner_(owner) {
  header_limit(kHeaderLimit);
  body_limit(boost::none);
  eager(true);
  skip(head_request);
}

void ResponseTranslator::Parser::on_request_impl(http::verb /*method*/,
                                                 beast::string_view /*method_str*/,
                                                 beast::string_view /*target*/, int /*version*/,
                                                 beast::error_code& /*ec*/) {}

void ResponseTranslator::Parser::on_response_impl(int code, beast::string_view /*reason*/,
                                                  int /*version*/, beast::error_code& /*ec*/) {
  status_ = code;
  owner_.fields_.clear();  // (after a 1xx: the final head's own fields)
}

void ResponseTranslator::Parser::on_field_impl(http::field /*name*/, beast::string_view name_string,
                                               beast::string_view value,
                                               beast::error_code& /*ec*/) {
  FieldBlock& into = is_header_done() ? owner_.trailers_ : owner_.fields_;
  into.add({name_string.data(), name_string.size()}, {value.data(), value.size()});
}

void ResponseTranslator::Parser::on_header_impl(beast::error_code& /*ec*/) {
  owner_.fields_.drop_connection_specific();
  owner_.listener_.on_head(status_, owner_.fields_, !informational());
}

void ResponseTranslator::Parser::on_body_init_impl(
    const boost::optional<std::uint64_t>& /*content_length*/, beast::error_code& /*ec*/) {}

std::size_t ResponseTranslator::Parser::on_body_impl(beast::string_view body,
                                                     beast::error_code& /*ec*/) {
  owner_.listener_.on_body({body.data(), body.size()});
  return body.size();
}

void ResponseTranslator::Parser::on_chunk_header_impl(std::uint64_t /*size*/,
                                                      beast::string_view /*extensions*/,
                                                      beast::error_code& /*ec*/) {}

std::size_t ResponseTranslator::Parser::on_chunk_body_impl(std::uint64_t /*remain*/,
                                                           beast::string_view body,
                                                           beast::error_code& /*ec*/) {
  owner_.listener_.on_body({body.data(), body.size()});
  return body.size();
}

void ResponseTranslator::Parser::on_finish_impl(beast::error_code& /*ec*/) {
  if (!informational()) {
    owner_.trailers_.drop_connection_specific();
    owner_.listener_.on_end(owner_.trailers_);
  }
}

// ---- ResponseTranslator -----------------------------------------------------------------------

void ResponseTranslator::reset(bool head_request) {
  head_request_ = head_request;
  fields_given_ = false;
  body_left_ = 0;
  done_ = false;
  failed_ = false;
  pending_.clear();
  fields_.clear();
  trailers_.clear();
  parser_.emplace(*this, head_request);
}

bool ResponseTranslator::parse(std::string_view& data) {
  while (!data.empty() && !done_) {
    beast::error_code ec;
    const std::size_t used = parser_->put(boost::asio::const_buffer(data.data(), data.size()), ec);
    data.remove_prefix(used);
    if (ec == http::error::need_more) {
      break;
    }
    if (ec) {
      failed_ = true;
      return false;
    }
    if (parser_->is_done()) {
      if (parser_->informational()) {
        parser_.emplace(*this, head_request_);
      } else {
        done_ = true;
      }
    } else if (used == 0) {
      break;
    }
  }
  return true;
}

bool ResponseTranslator::can_take_head() const noexcept {
  return parser_ && !parser_->got_some() && pending_.empty() && !done_ && !failed_ &&
         !fields_given_;
}

void ResponseTranslator::take_head(int status, std::uint64_t body_length) {
  fields_given_ = true;
  body_left_ = head_request_ ? 0 : body_length;
  fields_.drop_connection_specific();
  listener_.on_head(status, fields_, true);
  take_body({});
}

void ResponseTranslator::take_body(std::string_view bytes) {
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, bytes.size()));
  if (n > 0) {
    listener_.on_body(bytes.substr(0, n));
    body_left_ -= n;
  }
  if (body_left_ == 0) {
    done_ = true;
    trailers_.clear();
    listener_.on_end(trailers_);
  }
}

bool ResponseTranslator::feed(std::string_view bytes) {
  if (fields_given_) {
    if (!done_) {
      take_body(bytes);
    }
    return true;
  }
  if (failed_ || done_ || !parser_) {
    return !failed_ && parser_.has_value();  // past the end: nobody asked for more bytes
  }
  if (pending_.empty()) {
    std::string_view data = bytes;
    if (!parse(data)) {
      return false;
    }
    pending_.assign(done_ ? std::string_view() : data);
    return true;
  }
  pending_.append(bytes);
  std::string_view data = pending_;
  if (!parse(data)) {
    return false;
  }
  pending_.erase(0, pending_.size() - data.size());
  if (done_) {
    pending_.clear();
  }
  return true;
}

bool ResponseTranslator::finish() {
  if (fields_given_) {
    return done_;  // a body cut short stays incomplete
  }
  if (parser_ && !done_ && !failed_ && parser_->is_header_done() && parser_->need_eof()) {
    beast::error_code ec;
    parser_->put_eof(ec);
    done_ = !ec;
  }
  return done_;
}

}  // namespace sluice::http2
