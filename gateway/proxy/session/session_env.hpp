// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory_resource>

#include "gateway/insight/user_sample_ring.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/proxy/session/services.hpp"
#include "gateway/proxy/session/session_list.hpp"
#include "gateway/proxy/steps/auth_step.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// What a session needs of its worker besides the upstream side (docs/architecture.md,
/// "Ownership"). References outlive every session; confined to the worker's thread.
struct SessionEnv {
  const Services& services;
  WorkerView& view;
  DeadlineSweep& sweep;
  ContextPool& contexts;
  log::AccessLog::Batch* access_log;  ///< null when the access log is off
  store::StoreSlot store_slot;
  SessionList& sessions;
  std::pmr::memory_resource* ops;  ///< the worker's pool for operation memory
  /// The worker's ring to the heavy-hitter sketches; null with `admin.top_users` off.
  insight::UserSampleRing* top_users;
  /// The worker's credentials and the failure ledger (docs/identity.md); empty: nothing is
  /// verified.
  AuthTools auth = {};
};

}  // namespace sluice::proxy
