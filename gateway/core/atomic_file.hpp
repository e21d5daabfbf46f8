// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::core {

/// Replaces the file at `path` with `contents` so that a reader (or a crash) sees either the old
/// file or the new one, never a mix: writes a temporary file in the same directory, fsyncs it,
/// renames it over `path` and fsyncs the directory. A symbolic link is followed (its target is
/// replaced, the link kept). The new file keeps the old one's permission bits (0644 if there was
/// none) and its owner and group; when they cannot be kept (a process that may not give files
/// away: not root, the file someone else's), the file is not written, rather than silently
/// taken over. A file without any write permission bit is taken as the operator's "do not write"
/// and refused, even for root. Blocking (it fsyncs): never call it on an I/O thread of the data
/// path. Thread-safe for distinct paths.
struct AtomicWrite {
  /// Why the file was NOT replaced (the old one is untouched, the temporary file removed).
  std::optional<std::string> error;
  /// The file was replaced, but the directory could not be synced: the rename may not survive a
  /// crash of the machine.
  std::optional<std::string> warning;
};
[[nodiscard]] AtomicWrite write_file_atomically(const std::filesystem::path& path,
                                                std::string_view contents);

}  // namespace sluice::core
