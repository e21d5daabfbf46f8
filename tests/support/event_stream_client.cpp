// SPDX-License-Identifier: Apache-2.0
#include "tests/support/event_stream_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <stdexcept>

namespace sluice::testing {
namespace {

using SseSteadyTime = std::chrono::steady_clock::time_point;

std::string sse_lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::runtime_error sse_failure(const std::string& what) {
  return std::runtime_error("EventStreamClient: " + what + ": " + std::to_string(errno));
}

/// One SSE block ("id: 1\nevent: x\ndata: {...}") into `event`; false when it has no data
/// field (comments only), which dispatches nothing.
bool sse_parse_block(std::string_view block, SseEvent& event, std::size_t& comments) {
  bool has_data = false;
  event = SseEvent{};
  event.type = "message";
  while (!block.empty()) {
    const std::size_t end = std::min(block.find('\n'), block.size());
    std::string_view line = block.substr(0, end);
    block.remove_prefix(std::min(end + 1, block.size()));
    if (line.starts_with(':')) {
      ++comments;
      continue;
    }
    const std::size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (value.starts_with(' ')) {
      value.remove_prefix(1);
    }
    if (field == "id") {
      event.id = std::stoull(std::string(value));
    } else if (field == "event") {
      event.type = std::string(value);
    } else if (field == "data") {
      event.data += (has_data ? "\n" : "") + std::string(value);
      has_data = true;
    }
  }
  return has_data;
}

}  // namespace

EventStreamClient::EventStreamClient(std::uint16_t port, Options options) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    throw sse_failure("socket");
  }
  if (options.receive_buffer > 0) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &options.receive_buffer,
                 sizeof options.receive_buffer);
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd_);
    throw sse_failure("connect to port " + std::to_string(port));
  }
  std::string request = "GET " + options.target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (options.token) {
    request += "Authorization: Bearer " + *options.token + "\r\n";
  }
  if (options.last_event_id) {
    request += "Last-Event-ID: " + *options.last_event_id + "\r\n";
  }
  request += "Accept: text/event-stream\r\n\r\n";
  if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd_);
    throw sse_failure("send");
  }
}

EventStreamClient::~EventStreamClient() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool EventStreamClient::read_more(SseSteadyTime deadline) {
  if (eof_) {
    return false;
  }
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - SseSteadyTime::clock::now());
  pollfd p{fd_, POLLIN, 0};
  if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
    return false;
  }
  std::array<char, 16384> buffer{};
  const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
  if (n <= 0) {
    eof_ = true;  // closed or reset
    return false;
  }
  raw_.append(buffer.data(), static_cast<std::size_t>(n));
  decode();
  return true;
}

bool EventStreamClient::parse_head() {
  const std::size_t end = raw_.find("\r\n\r\n");
  if (end == std::string::npos) {
    return false;
  }
  const std::string head = raw_.substr(0, end);
  raw_.erase(0, end + 4);
  status_ = static_cast<unsigned>(std::stoul(head.substr(head.find(' ') + 1, 3)));
  std::size_t pos = head.find("\r\n");
  while (pos != std::string::npos) {
    const std::size_t next = head.find("\r\n", pos + 2);
    const std::string line =
        head.substr(pos + 2, next == std::string::npos ? next : next - pos - 2);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const std::size_t value = line.find_first_not_of(' ', colon + 1);
      headers_[sse_lowercase(line.substr(0, colon))] =
          value == std::string::npos ? "" : line.substr(value);
    }
    pos = next;
  }
  chunked_ = sse_lowercase(header("transfer-encoding")) == "chunked";
  return true;
}

void EventStreamClient::decode() {
  if (status_ == 0 && !parse_head()) {
    return;
  }
  if (!chunked_) {
    body_ += raw_;
    raw_.clear();
    return;
  }
  while (!last_chunk_) {
    const std::size_t line_end = raw_.find("\r\n");
    if (line_end == std::string::npos) {
      return;
    }
    const std::size_t size = std::stoul(raw_.substr(0, line_end), nullptr, 16);
    if (size == 0) {
      last_chunk_ = true;
      raw_.clear();
      return;
    }
    if (raw_.size() < line_end + 2 + size + 2) {
      return;  // the rest of the chunk is still on its way
    }
    body_.append(raw_, line_end + 2, size);
    raw_.erase(0, line_end + 2 + size + 2);
  }
}

unsigned EventStreamClient::status(std::chrono::milliseconds timeout) {
  const auto deadline = SseSteadyTime::clock::now() + timeout;
  while (status_ == 0 && read_more(deadline)) {
  }
  return status_;
}

std::string EventStreamClient::header(const std::string& lowercase_name) const {
  const auto it = headers_.find(lowercase_name);
  return it == headers_.end() ? "" : it->second;
}

std::optional<SseEvent> EventStreamClient::next(std::chrono::milliseconds timeout) {
  const auto deadline = SseSteadyTime::clock::now() + timeout;
  for (;;) {
    for (std::size_t end = body_.find("\n\n"); end != std::string::npos; end = body_.find("\n\n")) {
      const std::string block = body_.substr(0, end);
      body_.erase(0, end + 2);
      SseEvent event;
      if (sse_parse_block(block, event, comments_)) {
        return event;
      }
    }
    if (!read_more(deadline)) {
      return std::nullopt;
    }
  }
}

bool EventStreamClient::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = SseSteadyTime::clock::now() + timeout;
  while (read_more(deadline)) {
  }
  return eof_;
}

}  // namespace sluice::testing
