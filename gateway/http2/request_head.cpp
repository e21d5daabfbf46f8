// SPDX-License-Identifier: Apache-2.0
#include "gateway/http2/request_head.hpp"

namespace sluice::http2 {

void RequestHead::add(std::string_view name, std::string_view value) {
  bytes_ += name.size() + value.size() + 4;
  if (bytes_ > max_bytes_) {
    oversized_ = true;
  }
  if (oversized_) {
    return;
  }
  if (!name.empty() && name.front() == ':') {
    if (name == ":method") {
      method_.assign(value);
    } else if (name == ":path") {
      path_.assign(value);
    } else if (name == ":authority") {
      authority_.assign(value);
    } else if (name == ":scheme") {
      scheme_.assign(value);  // checked only: the listener says http or https upstream
    }
    return;
  }
  if (name == "cookie") {
    if (!cookie_.empty()) {
      cookie_.append("; ");
    }
    cookie_.append(value);
    return;
  }
  if (name == "te") {
    return;
  }
  if (name == "host") {
    host_.assign(value);
    return;
  }
  if (name == "content-length") {
    content_length_ = true;
  }
  fields_.append(name).append(": ").append(value).append("\r\n");
}

bool RequestHead::well_formed() const noexcept {
  if (method_ == "CONNECT") {
    return true;
  }
  if (scheme_ != "http" && scheme_ != "https") {
    return false;
  }
  return path_.starts_with('/') || (path_ == "*" && method_ == "OPTIONS");
}

void RequestHead::clear(std::size_t max_bytes) noexcept {
  max_bytes_ = max_bytes;
  bytes_ = 0;
  oversized_ = false;
  content_length_ = false;
  method_.clear();
  scheme_.clear();
  path_.clear();
  authority_.clear();
  host_.clear();
  cookie_.clear();
  fields_.clear();
}

std::string RequestHead::build(bool chunked) const {
  std::string head;
  build_into(head, chunked);
  return head;
}

void RequestHead::build_into(std::string& head, bool chunked,
                             std::optional<std::size_t> length) const {
  const std::string& host = authority_.empty() ? host_ : authority_;
  const bool connect = method_ == "CONNECT";
  head.clear();
  head.reserve(method_.size() + path_.size() + host.size() + cookie_.size() + fields_.size() + 80);
  head.append(method_).append(" ").append(connect ? host : path_).append(" HTTP/1.1\r\n");
  if (!host.empty()) {
    head.append("host: ").append(host).append("\r\n");
  }
  head.append(fields_);
  if (!cookie_.empty()) {
    head.append("cookie: ").append(cookie_).append("\r\n");
  }
  if (chunked) {
    head.append("transfer-encoding: chunked\r\n");
  } else if (length) {
    head.append("content-length: ").append(std::to_string(*length)).append("\r\n");
  }
  head.append("\r\n");
}

}  // namespace sluice::http2
