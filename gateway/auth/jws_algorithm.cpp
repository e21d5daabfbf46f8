// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/jws_algorithm.hpp"

#include <array>
#include <utility>

namespace sluice::auth {
namespace {

constexpr std::array<std::pair<std::string_view, JwsAlgorithm>, 6> kNames{{
    {"ES256", JwsAlgorithm::kES256},
    {"ES384", JwsAlgorithm::kES384},
    {"RS256", JwsAlgorithm::kRS256},
    {"PS256", JwsAlgorithm::kPS256},
    {"EdDSA", JwsAlgorithm::kEdDSA},
    {"HS256", JwsAlgorithm::kHS256},
}};

}  // namespace

std::optional<JwsAlgorithm> jws_algorithm(std::string_view name) {
  for (const auto& [text, algorithm] : kNames) {
    if (text == name) {
      return algorithm;
    }
  }
  return std::nullopt;
}

std::string_view name_of(JwsAlgorithm algorithm) {
  for (const auto& [text, value] : kNames) {
    if (value == algorithm) {
      return text;
    }
  }
  return "?";
}

}  // namespace sluice::auth
