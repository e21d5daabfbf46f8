// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <boost/asio/buffer.hpp>
#include <cstddef>
#include <iterator>

namespace sluice::tls {

/// One SSL_read or SSL_write takes an int's worth at most.
inline constexpr std::size_t kMaxSslCall = std::size_t{1} << 30;
/// A TLS record's payload.
inline constexpr std::size_t kRecordPayload = std::size_t{16} * 1024;

/// What one SSL_write of `buffers` takes: the first non-empty buffer when it is the only one or
/// a record's worth; else the first record's worth of the sequence, copied into the thread's
/// scratch (valid until this thread's next call). Small pieces (a response head in many fields)
/// thus leave in one record, as Asio's ssl::stream does: a record and a send per piece would
/// cost the client a decryption each.
template <typename Buffers>
boost::asio::const_buffer gather_record(const Buffers& buffers) {
  namespace net = boost::asio;
  thread_local std::array<char, kRecordPayload> scratch;
  auto it = net::buffer_sequence_begin(buffers);
  const auto end = net::buffer_sequence_end(buffers);
  while (it != end && net::const_buffer(*it).size() == 0) {
    ++it;
  }
  if (it == end) {
    return {};
  }
  const net::const_buffer head(*it);
  if (head.size() >= kRecordPayload || std::next(it) == end) {
    return net::buffer(head.data(), std::min(head.size(), kMaxSslCall));
  }
  std::size_t used = 0;
  for (; it != end && used < kRecordPayload; ++it) {
    used += net::buffer_copy(net::buffer(scratch.data() + used, kRecordPayload - used),
                             net::const_buffer(*it));
  }
  return net::buffer(scratch.data(), used);
}

}  // namespace sluice::tls
