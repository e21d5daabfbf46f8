// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::testing {

/// `co_await op(..., kAsTuple)` yields (error_code, ...) instead of throwing.
inline constexpr auto kAsTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace sluice::testing
