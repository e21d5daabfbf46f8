// SPDX-License-Identifier: Apache-2.0
// Beast's in-memory test stream as a data-path stream: the session, exchange and relay templates
// run over it unchanged (docs/architecture.md, "Streams"), with Beast's fail_count for fault
// injection. Include before instantiating them.
#pragma once

#include <boost/beast/_experimental/test/stream.hpp>
#include <cstddef>
#include <optional>

#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"

namespace sluice::testing {

using TestStream = boost::beast::test::basic_stream<sluice::proxy::Executor>;

}  // namespace sluice::testing

namespace sluice::proxy {

template <>
struct StreamOps<testing::TestStream> {
  /// A test stream cannot cancel an operation; ending its input fails a pending read (with
  /// eof) and leaves it writable, which is what a deadline does to a socket (the data path
  /// asks the deadline, not the error, whether time ran out).
  static void cancel(testing::TestStream& s) noexcept { s.close_remote(); }
  /// cancel() as a Deadline's expire function.
  static void cancel_void(void* s) noexcept { cancel(*static_cast<testing::TestStream*>(s)); }
  static void shutdown_send(testing::TestStream& s) noexcept { s.close(); }
  static void close(testing::TestStream& s) noexcept { s.close(); }
  [[nodiscard]] static bool is_open(const testing::TestStream& /*s*/) noexcept { return true; }
  template <typename Buffers>
  static std::optional<std::size_t> write_now(testing::TestStream& /*s*/,
                                              const Buffers& /*buffers*/,
                                              boost::system::error_code& /*ec*/) {
    return std::nullopt;  // always the asynchronous path, where fail_count applies
  }
  static void prepare(testing::TestStream& /*s*/) noexcept {}
};

}  // namespace sluice::proxy
