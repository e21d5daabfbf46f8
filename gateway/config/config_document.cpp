// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/config_document.hpp"

#include <utility>

#include "gateway/config/config_loader.hpp"

namespace sluice::config {

ConfigDocument::ConfigDocument(nlohmann::ordered_json json, Config config)
    : json_(std::move(json)), config_(std::make_shared<const Config>(std::move(config))) {}

LoadedDocument ConfigDocument::from_json(nlohmann::ordered_json document) {
  auto loaded = parse_config(document);
  return make(std::move(document), std::move(loaded));
}

LoadedDocument ConfigDocument::from_text(std::string_view text) {
  auto parsed = parse_json_text(text);
  if (!parsed.json) {
    return {std::nullopt, std::move(parsed.problems)};
  }
  auto loaded = merge_problems(std::move(parsed.problems), parse_config(*parsed.json));
  return make(std::move(*parsed.json), std::move(loaded));
}

LoadedDocument ConfigDocument::from_file(const std::filesystem::path& path) {
  std::string text;
  if (auto problem = read_config_file(path, text)) {
    return {std::nullopt, {std::move(*problem)}};
  }
  return from_text(text);
}

LoadedDocument ConfigDocument::make(nlohmann::ordered_json document, LoadResult loaded) {
  if (!loaded.ok()) {
    return {std::nullopt, std::move(loaded.problems)};
  }
  return {ConfigDocument(std::move(document), std::move(*loaded.config)), {}};
}

std::string ConfigDocument::text() const {
  return json_.dump(2) + "\n";
}

}  // namespace sluice::config
