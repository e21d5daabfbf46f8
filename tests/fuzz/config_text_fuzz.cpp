// SPDX-License-Identifier: Apache-2.0
// The config reader and validator on arbitrary text. A config it accepts must come back from
// its own writer (what GET /admin/config shows) as the same config.
#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {

int config_text(Input input) {
  const config::LoadResult loaded = config::parse_config_text(text_of(input));
  SLUICE_FUZZ_CHECK(loaded.ok() || !loaded.problems.empty());  // a refusal says why
  if (!loaded.ok()) {
    return 0;
  }
  const nlohmann::json written = config::to_json(*loaded.config);
  const config::LoadResult again = config::parse_config(written);
  SLUICE_FUZZ_CHECK(again.ok());
  SLUICE_FUZZ_CHECK(config::to_json(*again.config) == written);
  return 0;
}

}  // namespace sluice::fuzz
