// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace sluice::testing {

/// A fresh directory under the temp dir (`<tmp>/<prefix>-XXXXXX`), removed with everything in
/// it on destruction. Throws std::runtime_error when it cannot be made.
/// Thread-safety: immutable after construction. Lifetime: owns the directory.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "sluice-test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// `path() / name`.
  [[nodiscard]] std::filesystem::path operator/(std::string_view name) const {
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace sluice::testing
