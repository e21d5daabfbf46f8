// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/config/problems.hpp"

namespace sluice::config {

struct LoadedDocument;

/// The operator's config document (JSON, with the key order and every field as written) together
/// with the Config validated from it. Admin changes edit a copy of the document and validate the
/// whole of it again, so what is persisted is exactly what the operator wrote plus the change,
/// and no partial change is ever half valid. An immutable value: copy it freely; the Config is
/// shared, never mutated, and safe to read from any thread.
class ConfigDocument {
 public:
  /// Validates a whole document (config_loader.hpp's parse_config rules).
  [[nodiscard]] static LoadedDocument from_json(nlohmann::ordered_json document);
  /// Parses and validates JSON text (duplicate keys and syntax errors are problems too).
  [[nodiscard]] static LoadedDocument from_text(std::string_view text);
  /// Reads, parses and validates a file (an unreadable file is one problem at its path).
  [[nodiscard]] static LoadedDocument from_file(const std::filesystem::path& path);

  [[nodiscard]] const nlohmann::ordered_json& json() const noexcept { return json_; }
  [[nodiscard]] const Config& config() const noexcept { return *config_; }
  [[nodiscard]] const std::shared_ptr<const Config>& shared_config() const noexcept {
    return config_;
  }
  /// The document as it is written to disk: two-space indentation and a final newline.
  [[nodiscard]] std::string text() const;

 private:
  ConfigDocument(nlohmann::ordered_json json, Config config);
  static LoadedDocument make(nlohmann::ordered_json document, LoadResult loaded);

  nlohmann::ordered_json json_;
  std::shared_ptr<const Config> config_;
};

/// A validated document, or every problem that prevented one (never both, never neither).
struct LoadedDocument {
  std::optional<ConfigDocument> document;
  std::vector<Problem> problems;

  [[nodiscard]] bool ok() const { return document.has_value(); }
};

}  // namespace sluice::config
