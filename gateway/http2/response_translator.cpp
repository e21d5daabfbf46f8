// SPDX-License-Identifier: Apache-2.0
#include "gateway/http2/response_translator.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cctype>

namespace sluice::http2 {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::uint32_t kHeaderLimit = 1U << 20;  // the data path already bounded the head

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
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

/// Drops the fields HTTP/2 forbids (RFC 9113 §8.2.2) and those the Connection field names.
void drop_connection_specific(FieldVector& fields) {
  std::string connection;
  for (const auto& [name, value] : fields) {
    if (name == "connection") {
      connection.append(value).append(",");
    }
  }
  std::erase_if(fields, [&](const auto& field) {
    const std::string& name = field.first;
    return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
           name == "transfer-encoding" || name == "upgrade" || name == "te" ||
           named_in(connection, name);
  });
}

}  // namespace

/// Beast's parser, reporting to the listener as it goes.
class ResponseTranslator::Parser final : public http::basic_parser<false> {
 public:
  Parser(ResponseListener& listener, bool head_request) : listener_(listener) {
    header_limit(kHeaderLimit);
    body_limit(boost::none);
    eager(true);
    skip(head_request);
  }
  [[nodiscard]] bool informational() const noexcept { return status_ >= 100 && status_ < 200; }

 private:
  void on_request_impl(http::verb /*method*/, beast::string_view /*method_str*/,
                       beast::string_view /*target*/, int /*version*/,
                       beast::error_code& /*ec*/) override {}
  void on_response_impl(int code, beast::string_view /*reason*/, int /*version*/,
                        beast::error_code& /*ec*/) override {
    status_ = code;
  }
  void on_field_impl(http::field /*name*/, beast::string_view name_string, beast::string_view value,
                     beast::error_code& /*ec*/) override {
    FieldVector& into = is_header_done() ? trailers_ : fields_;
    into.emplace_back(lowercase({name_string.data(), name_string.size()}),
                      std::string(value.data(), value.size()));
  }
  void on_header_impl(beast::error_code& /*ec*/) override {
    drop_connection_specific(fields_);
    listener_.on_head(status_, std::move(fields_), !informational());
  }
  void on_body_init_impl(const boost::optional<std::uint64_t>& /*content_length*/,
                         beast::error_code& /*ec*/) override {}
  std::size_t on_body_impl(beast::string_view body, beast::error_code& /*ec*/) override {
    listener_.on_body({body.data(), body.size()});
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t /*size*/, beast::string_view /*extensions*/,
                            beast::error_code& /*ec*/) override {}
  std::size_t on_chunk_body_impl(std::uint64_t /*remain*/, beast::string_view body,
                                 beast::error_code& /*ec*/) override {
    listener_.on_body({body.data(), body.size()});
    return body.size();
  }
  void on_finish_impl(beast::error_code& /*ec*/) override {
    if (!informational()) {
      drop_connection_specific(trailers_);
      listener_.on_end(std::move(trailers_));
    }
  }

  ResponseListener& listener_;
  int status_ = 0;
  FieldVector fields_;
  FieldVector trailers_;
};

ResponseTranslator::ResponseTranslator(ResponseListener& listener, bool head_request)
    : listener_(listener),
      head_request_(head_request),
      current_(std::make_unique<Parser>(listener, head_request)) {}

ResponseTranslator::~ResponseTranslator() = default;

bool ResponseTranslator::parse(std::string_view& data) {
  while (!data.empty() && !done_) {
    beast::error_code ec;
    const std::size_t used = current_->put(boost::asio::const_buffer(data.data(), data.size()), ec);
    data.remove_prefix(used);
    if (ec == http::error::need_more) {
      break;
    }
    if (ec) {
      failed_ = true;
      return false;
    }
    if (current_->is_done()) {
      if (current_->informational()) {
        current_ = std::make_unique<Parser>(listener_, head_request_);
      } else {
        done_ = true;
      }
    } else if (used == 0) {
      break;
    }
  }
  return true;
}

bool ResponseTranslator::feed(std::string_view bytes) {
  if (failed_ || done_) {
    return !failed_;  // bytes past the end of the response: nobody asked for them
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
  if (!done_ && !failed_ && current_->is_header_done() && current_->need_eof()) {
    beast::error_code ec;
    current_->put_eof(ec);
    done_ = !ec;
  }
  return done_;
}

}  // namespace sluice::http2
