// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/intrusive/list.hpp>
#include <cstddef>

namespace sluice::proxy {

class SessionEntry;
using SessionList =
    boost::intrusive::list<SessionEntry, boost::intrusive::constant_time_size<false>>;

/// A client connection as its worker tracks it, for the drain: whether it waits for a request,
/// and how to stop it. Linked into the worker's list for the session's life (unlinked by its
/// destructor). Confined to the worker's thread; the list outlives it, `stream` outlives it.
class SessionEntry : public boost::intrusive::list_base_hook<
                         boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  using Action = void (*)(void* stream) noexcept;

  SessionEntry(SessionList& list, Action on_cancel, Action on_close, void* stream) noexcept
      : cancel_(on_cancel), close_(on_close), stream_(stream) {
    list.push_back(*this);
  }
  SessionEntry(const SessionEntry&) = delete;
  SessionEntry& operator=(const SessionEntry&) = delete;

  /// Waiting for the next request (a drain closes it at once).
  bool idle = true;
  /// Fails the pending read (an idle connection then ends without an answer).
  void cancel() noexcept { cancel_(stream_); }
  /// Cuts the connection (the drain timeout).
  void close() noexcept { close_(stream_); }

 private:
  Action cancel_;
  Action close_;
  void* stream_;
};

}  // namespace sluice::proxy
