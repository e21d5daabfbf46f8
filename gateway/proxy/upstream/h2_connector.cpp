// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/upstream/h2_connector.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/write.hpp>
#include <utility>

namespace sluice::proxy {
namespace {

constexpr std::size_t kReadSize = 16U * 1024U;   // one read from the backend
constexpr std::size_t kWriteSize = 64U * 1024U;  // frames gathered into one write

}  // namespace

H2UpstreamSession::H2UpstreamSession(const Executor& executor, const UpstreamEndpoint& endpoint,
                                     std::shared_ptr<spdlog::logger> log)
    : executor_(executor),
      label_(endpoint.label),
      tls_(endpoint.tls.get()),
      log_(std::move(log)),
      protocol_(
          std::make_shared<http2::ClientConnection>(*this, executor, endpoint.tls != nullptr)),
      connected_(executor, net::steady_timer::time_point::max()) {}

H2UpstreamSession::~H2UpstreamSession() {
  protocol_->abort();
}

void H2UpstreamSession::start(ConnectionPtr<UpstreamStream> connection) {
  connection_ = std::move(connection);
  connecting_ = false;
  connected_.cancel();
  net::co_spawn(executor_, read_loop(), net::detached);
  on_output();  // the preface and SETTINGS, and the requests submitted while connecting
}

void H2UpstreamSession::connect_failed(boost::system::error_code ec) {
  connect_error_ = ec;
  connecting_ = false;
  ended_ = true;
  protocol_->abort();
  connected_.cancel();
}

Task<void> H2UpstreamSession::wait_connected() {
  if (connecting_) {
    // (Cancelled when connecting ends: the error is the wake-up.)
    [[maybe_unused]] auto [ec] = co_await connected_.async_wait(kAsTuple);
  }
}

bool H2UpstreamSession::can_open(std::uint32_t max) const {
  // Streams reserved by requests that waited for the connect are not taken by later arrivals.
  return !connecting_ && !ended_ && protocol_->can_open(max, reserved);
}

bool H2UpstreamSession::finished() const {
  if (connecting_) {
    return false;
  }
  return ended_ || protocol_->gone() ||
         (protocol_->going_away() && protocol_->streams() == 0 && reserved == 0);
}

std::size_t H2UpstreamSession::load() const noexcept {
  return protocol_->streams() + reserved;
}

void H2UpstreamSession::note_activity(core::TimePoint now) noexcept {
  idle_since_ = now;
}

void H2UpstreamSession::close() {
  end("closed by sluice");
}

void H2UpstreamSession::end(std::string_view why) {
  if (ended_) {
    return;
  }
  ended_ = true;
  const std::size_t streams = protocol_->streams();
  if (streams > 0 && log_) {
    log_->warn("upstream h2 connection ended endpoint={} streams_failed={} reason=\"{}\"", label_,
               streams, why);
  }
  protocol_->abort();
  if (connection_) {
    StreamOps<UpstreamStream>::close(connection_->stream);
  }
  connected_.cancel();
}

void H2UpstreamSession::on_output() {
  // Frames queued by one burst of work (many streams' writes, one read's acknowledgements) leave
  // together: one flush per turn of the event loop, not one per frame.
  if (flush_queued_ || writing_ || ended_ || connecting_) {
    return;
  }
  flush_queued_ = true;
  net::post(executor_, [self = shared_from_this()] {
    self->flush_queued_ = false;
    self->flush();
  });
}

void H2UpstreamSession::flush() {
  while (!writing_ && !ended_) {
    out_.clear();
    protocol_->send(out_, kWriteSize);
    if (out_.empty()) {
      if (!protocol_->wants_io()) {
        end(protocol_->reason().empty() ? "the connection is done" : protocol_->reason());
      }
      return;
    }
    // Most flushes fit the socket's buffer: written at once, without a trip through the loop.
    boost::system::error_code ec;
    const std::optional<std::size_t> written =
        StreamOps<UpstreamStream>::write_now(connection_->stream, net::buffer(out_), ec);
    if (ec) {
      end(ec.message());
      return;
    }
    const std::size_t done = written.value_or(0);
    if (done == out_.size()) {
      continue;
    }
    writing_ = true;
    net::async_write(connection_->stream, net::buffer(out_.data() + done, out_.size() - done),
                     [self = shared_from_this()](boost::system::error_code wec, std::size_t) {
                       self->writing_ = false;
                       if (wec) {
                         self->end(wec.message());
                       } else {
                         self->flush();
                       }
                     });
  }
}

Task<void> H2UpstreamSession::read_loop() {
  const auto self = shared_from_this();
  auto& buffer = connection_->buffer;
  while (!ended_) {
    auto [ec, n] =
        co_await connection_->stream.async_read_some(buffer.prepare(kReadSize), kAsTuple);
    if (ended_) {
      break;
    }
    if (ec) {
      end(ec == net::error::eof ? std::string_view("the backend closed the connection")
                                : std::string_view(ec.message()));
      break;
    }
    buffer.commit(n);
    const auto data = buffer.cdata();
    const bool ok = protocol_->receive({static_cast<const char*>(data.data()), data.size()});
    buffer.consume(buffer.size());
    if (!ok) {
      end(protocol_->reason());
      break;
    }
    on_output();  // SETTINGS and PING acknowledgements, WINDOW_UPDATEs
    if (!protocol_->wants_io()) {
      end(protocol_->reason().empty() ? "the connection is done" : protocol_->reason());
      break;
    }
  }
}

Task<Connected<UpstreamStream>> H2Connector::connect(const UpstreamEndpoint& endpoint,
                                                     core::Duration timeout) {
  if (!endpoint.speaks_h2()) {
    co_return co_await tcp_.connect(endpoint, timeout);
  }
  const std::uint32_t max = endpoint.max_streams_per_connection;
  for (;;) {  // (again when a connection waited for is full by the time it is open)
    std::shared_ptr<H2UpstreamSession> chosen;
    auto& list = sessions_[endpoint.label];
    std::erase_if(list, [](const auto& s) { return s->finished(); });
    for (const auto& s : list) {
      if (s->tls() == endpoint.tls.get() && s->can_open(max)) {
        co_return stream_on(*s, endpoint);
      }
    }
    for (const auto& s : list) {  // one being connected, with room: wait for it
      if (s->tls() == endpoint.tls.get() && s->connecting() && s->load() < max) {
        chosen = s;
        break;
      }
    }
    if (!chosen) {
      break;
    }
    ++chosen->reserved;
    co_await chosen->wait_connected();
    --chosen->reserved;
    if (chosen->can_open(max)) {
      co_return stream_on(*chosen, endpoint);
    }
    if (chosen->connect_error()) {
      co_return Connected<UpstreamStream>{nullptr, chosen->connect_error()};
    }
  }
  auto session = std::make_shared<H2UpstreamSession>(executor_, endpoint, log_);
  sessions_[endpoint.label].push_back(session);
  ++session->reserved;
  Connected<UpstreamStream> opened = co_await tcp_.open(endpoint, timeout);
  --session->reserved;
  if (!opened.connection) {
    session->connect_failed(opened.error);
    co_return Connected<UpstreamStream>{nullptr, opened.error};
  }
  session->start(std::move(opened.connection));
  co_return stream_on(*session, endpoint);
}

Connected<UpstreamStream> H2Connector::stream_on(H2UpstreamSession& session,
                                                 const UpstreamEndpoint& endpoint) {
  session.note_activity(clock_.now());
  auto stream = session.open_stream();
  if (!stream) {
    return {nullptr, net::error::connection_reset};
  }
  auto conn = std::make_shared<UpstreamConnection<UpstreamStream>>(executor_);
  conn->stream.attach_h2(std::move(stream));
  conn->tls = endpoint.tls.get();
  conn->watch(ops_);  // it will receive the response's first bytes
  return {std::move(conn), {}};
}

std::size_t H2Connector::sweep(const std::function<bool(std::string_view endpoint)>& keep,
                               core::Duration max_idle) {
  const core::TimePoint now = clock_.now();
  std::size_t closed = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const bool kept = keep(it->first);
    std::erase_if(it->second, [&](const std::shared_ptr<H2UpstreamSession>& s) {
      if (s->finished()) {
        return true;
      }
      if (s->connecting() || s->load() > 0) {
        s->note_activity(now);
        if (kept) {
          return false;
        }
      }
      if (!kept || now - s->idle_since() >= max_idle) {
        s->close();
        ++closed;
        return true;
      }
      return false;
    });
    it = it->second.empty() ? sessions_.erase(it) : std::next(it);
  }
  return closed;
}

void H2Connector::clear() {
  for (auto& [label, list] : sessions_) {
    for (const auto& s : list) {
      s->close();
    }
  }
  sessions_.clear();
}

std::size_t H2Connector::connections() const {
  std::size_t n = 0;
  for (const auto& [label, list] : sessions_) {
    n += list.size();
  }
  return n;
}

}  // namespace sluice::proxy
