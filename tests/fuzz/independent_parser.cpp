// SPDX-License-Identifier: Apache-2.0
#include "tests/fuzz/independent_parser.hpp"

#include <http_parser.h>

#include <boost/beast/core/string.hpp>

namespace sluice::fuzz {

std::size_t ReadRequest::count(std::string_view name) const {
  std::size_t n = 0;
  for (const auto& [field, value] : fields) {
    n += boost::beast::iequals(field, name) ? 1 : 0;
  }
  return n;
}

std::string ReadRequest::value(std::string_view name) const {
  for (const auto& [field, value] : fields) {
    if (boost::beast::iequals(field, name)) {
      return value;
    }
  }
  return {};
}

struct IndependentParser::State {
  http_parser parser{};
  http_parser_settings settings{};
  std::vector<ReadRequest>* requests = nullptr;
  bool in_value = false;  ///< the last field callback was a value: a name now starts a field
};

namespace {

IndependentParser::State& state_of(http_parser* p) {
  return *static_cast<IndependentParser::State*>(p->data);
}
ReadRequest& current(http_parser* p) {
  return state_of(p).requests->back();
}

}  // namespace

IndependentParser::IndependentParser() : state_(std::make_unique<State>()) {
  http_parser_init(&state_->parser, HTTP_REQUEST);
  state_->parser.data = state_.get();
  state_->requests = &requests_;
  http_parser_settings& s = state_->settings;
  http_parser_settings_init(&s);
  s.on_message_begin = [](http_parser* p) {
    state_of(p).requests->emplace_back();
    state_of(p).in_value = true;
    return 0;
  };
  s.on_url = [](http_parser* p, const char* at, std::size_t n) {
    current(p).target.append(at, n);
    return 0;
  };
  // A field's name and its value may each arrive in pieces (across feeds).
  s.on_header_field = [](http_parser* p, const char* at, std::size_t n) {
    auto& fields = current(p).fields;
    if (state_of(p).in_value) {
      fields.emplace_back();
      state_of(p).in_value = false;
    }
    fields.back().first.append(at, n);
    return 0;
  };
  s.on_header_value = [](http_parser* p, const char* at, std::size_t n) {
    state_of(p).in_value = true;
    current(p).fields.back().second.append(at, n);
    return 0;
  };
  s.on_headers_complete = [](http_parser* p) {
    ReadRequest& r = current(p);
    r.method = http_method_str(static_cast<http_method>(p->method));
    if ((p->flags & F_CHUNKED) != 0) {
      r.body_kind = BodyKind::kChunked;
    } else if (p->content_length != ULLONG_MAX && p->content_length > 0) {
      r.body_kind = BodyKind::kLength;
      r.length = p->content_length;
    }
    return 0;
  };
  s.on_body = [](http_parser* p, const char* at, std::size_t n) {
    current(p).body.append(at, n);
    return 0;
  };
  s.on_message_complete = [](http_parser* p) {
    current(p).complete = true;
    return 0;
  };
}

IndependentParser::~IndependentParser() = default;

bool IndependentParser::feed(std::string_view bytes) {
  if (HTTP_PARSER_ERRNO(&state_->parser) != HPE_OK) {
    return false;
  }
  http_parser_execute(&state_->parser, &state_->settings, bytes.data(), bytes.size());
  return HTTP_PARSER_ERRNO(&state_->parser) == HPE_OK;
}

std::string_view IndependentParser::error() const {
  return http_errno_name(HTTP_PARSER_ERRNO(&state_->parser));
}

}  // namespace sluice::fuzz
