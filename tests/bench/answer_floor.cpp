// SPDX-License-Identifier: Apache-2.0
// sluice-answer-floor: the least work any HTTP server on this machine can do for a request, as a
// floor beside the proxies in `tests/bench/auth_compare.py flood` (docs/benchmarks.md,
// "Identity"). One thread, edge-triggered epoll, and per request one `recv` and one `send` of a
// fixed `429` with an empty body: no parsing beyond finding the end of each request head, no
// timers, no allocation, no logging. Whatever this costs per request is the kernel's TCP and
// system-call work plus an epoll wake-up, which every server pays; a proxy's CPU per request can
// only be compared against it, never fall below it.
//
// Deliberately not Asio: the point is the bare system calls, with nothing of a framework's own.
// A send that would block or only partly completes closes the connection (a 51-byte answer into
// an empty socket buffer does neither under a request-response load; the tool is for that load).
//
// usage: sluice-answer-floor [--port N]   (0, the default: any free port)
//   prints "listening 127.0.0.1:PORT" once it accepts, then serves until killed.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view kAnswer = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n";

/// How far into "\r\n\r\n" each connection's bytes so far have matched (0-3), by descriptor: a
/// request head split across reads is still counted once.
std::vector<std::uint8_t> matched;

/// The number of request heads that end in `bytes`, carrying the partial match in `state`.
int count_heads(std::string_view bytes, std::uint8_t& state) {
  int heads = 0;
  for (const char c : bytes) {
    const bool expect_cr = state % 2 == 0;
    if (c == (expect_cr ? '\r' : '\n')) {
      if (++state == 4) {
        ++heads;
        state = 0;
      }
    } else {
      state = c == '\r' ? 1 : 0;
    }
  }
  return heads;
}

void close_connection(int fd) {
  matched[static_cast<std::size_t>(fd)] = 0;
  ::close(fd);
}

/// Reads what `fd` has and answers every complete head; closes the connection at its end or on
/// an error. One read per wake-up unless the buffer came back full (the data may go on).
void serve(int fd, std::array<char, 16384>& buffer) {
  for (;;) {
    const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (got <= 0) {
      if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_connection(fd);
      }
      return;
    }
    const int heads = count_heads(std::string_view(buffer.data(), static_cast<std::size_t>(got)),
                                  matched[static_cast<std::size_t>(fd)]);
    for (int i = 0; i < heads; ++i) {
      const ssize_t sent = ::send(fd, kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL);
      if (sent != static_cast<ssize_t>(kAnswer.size())) {
        close_connection(fd);
        return;
      }
    }
    if (static_cast<std::size_t>(got) < buffer.size()) {
      return;
    }
  }
}

int fail(const char* what) {
  std::fprintf(stderr, "sluice-answer-floor: %s: errno %d\n", what, errno);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];  // NOLINT(*-pointer-arithmetic)
    if (arg == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);  // NOLINT(*-pointer-arithmetic)
    } else {
      std::fprintf(stderr, "usage: sluice-answer-floor [--port N]\n");
      return 2;
    }
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    return fail("socket");
  }
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(*-reinterpret-cast): the sockets API takes the generic address type
  auto* generic = reinterpret_cast<sockaddr*>(&address);
  socklen_t length = sizeof address;
  if (::bind(listener, generic, length) != 0 || ::listen(listener, 4096) != 0 ||
      ::getsockname(listener, generic, &length) != 0) {
    return fail("listen");
  }
  const int poller = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listener;
  if (poller < 0 || ::epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event) != 0) {
    return fail("epoll");
  }
  std::printf("listening 127.0.0.1:%u\n", static_cast<unsigned>(ntohs(address.sin_port)));
  std::fflush(stdout);

  std::array<epoll_event, 256> ready{};
  std::array<char, 16384> buffer{};
  for (;;) {
    const int count = ::epoll_wait(poller, ready.data(), static_cast<int>(ready.size()), -1);
    if (count < 0 && errno != EINTR) {
      return fail("epoll_wait");
    }
    for (int i = 0; i < count; ++i) {
      const int fd = ready[static_cast<std::size_t>(i)].data.fd;
      if (fd != listener) {
        serve(fd, buffer);
        continue;
      }
      int connection = 0;
      while ((connection = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
             0) {
        ::setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (matched.size() <= static_cast<std::size_t>(connection)) {
          matched.resize(static_cast<std::size_t>(connection) + 1, 0);
        }
        epoll_event watch{};
        watch.events = EPOLLIN | EPOLLET | EPOLLRDHUP;
        watch.data.fd = connection;
        if (::epoll_ctl(poller, EPOLL_CTL_ADD, connection, &watch) != 0) {
          ::close(connection);
        }
      }
    }
  }
}
