// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/config.hpp"

namespace sluice::config {

std::string_view to_string(Balance balance) {
  switch (balance) {
    case Balance::kRoundRobin:
      return "round_robin";
    case Balance::kLeastRequest:
      return "least_request";
    case Balance::kRandom:
      return "random";
  }
  return "unknown";
}

std::string_view to_string(UpstreamProtocol protocol) {
  switch (protocol) {
    case UpstreamProtocol::kHttp1:
      return "http1";
    case UpstreamProtocol::kH2:
      return "h2";
    case UpstreamProtocol::kH2c:
      return "h2c";
  }
  return "unknown";
}

std::string_view to_string(EnforcementMode mode) {
  switch (mode) {
    case EnforcementMode::kEnforce:
      return "enforce";
    case EnforcementMode::kShadow:
      return "shadow";
  }
  return "unknown";
}

std::string_view to_string(StoreType type) {
  switch (type) {
    case StoreType::kMemory:
      return "memory";
    case StoreType::kRedis:
      return "redis";
  }
  return "unknown";
}

std::string_view to_string(IdentitySource::CertName name) {
  switch (name) {
    case IdentitySource::CertName::kSubjectCn:
      return "subject_cn";
    case IdentitySource::CertName::kSanDns:
      return "san_dns";
    case IdentitySource::CertName::kSanUri:
      return "san_uri";
  }
  return "unknown";
}

std::string_view to_string(OnError on_error) {
  switch (on_error) {
    case OnError::kLocal:
      return "local";
    case OnError::kLocalShare:
      return "local_share";
    case OnError::kAllow:
      return "allow";
    case OnError::kDeny:
      return "deny";
  }
  return "unknown";
}

std::string_view to_string(StoreMode mode) {
  return mode == StoreMode::kHybrid ? "hybrid" : "exact";
}

std::string_view to_string(RequestIdPolicy policy) {
  switch (policy) {
    case RequestIdPolicy::kPreserve:
      return "preserve";
    case RequestIdPolicy::kTrusted:
      return "trusted";
    case RequestIdPolicy::kReplace:
      return "replace";
  }
  return "preserve";
}

std::string_view to_string(RouteAuth auth) {
  switch (auth) {
    case RouteAuth::kOff:
      return "off";
    case RouteAuth::kOptional:
      return "optional";
    case RouteAuth::kRequired:
      return "required";
  }
  return "off";
}

}  // namespace sluice::config
