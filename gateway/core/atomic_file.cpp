// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace sluice::core {
namespace {

constexpr mode_t kNewFileMode = 0644;
constexpr mode_t kWriteBits = 0222;
constexpr mode_t kPermissionBits = 07777;

std::string failure(std::string_view step, const std::filesystem::path& subject, int error) {
  return std::string(step) + " " + subject.string() + ": " +
         std::error_code(error, std::generic_category()).message();
}

// Closes a file descriptor on scope exit unless released.
class Descriptor {
 public:
  explicit Descriptor(int fd) noexcept : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) {
      static_cast<void>(::close(fd_));
    }
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  [[nodiscard]] int get() const noexcept { return fd_; }
  /// Closes now and reports close()'s error (a deferred write error shows up here).
  int close_now() noexcept {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

std::string octal(mode_t mode) {
  std::string digits;
  for (int shift = 9; shift >= 0; shift -= 3) {
    digits.push_back(static_cast<char>('0' + ((mode >> static_cast<unsigned>(shift)) & 7U)));
  }
  return digits;
}

int write_all(int fd, std::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    contents.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

/// The file's mode bits and owner to give the new file.
struct Keep {
  mode_t mode = kNewFileMode;
  std::optional<std::pair<uid_t, gid_t>> owner;  ///< none for a new file: ours
};

// Writes `contents` into the already created temporary file `fd`, with the old file's mode and
// owner, and syncs it.
std::optional<std::string> fill(Descriptor& fd, const std::filesystem::path& temp,
                                std::string_view contents, const Keep& keep,
                                const std::filesystem::path& target) {
  if (const int error = write_all(fd.get(), contents); error != 0) {
    return failure("cannot write", temp, error);
  }
  // Owner before mode: fchown clears set-user-ID and set-group-ID bits.
  if (keep.owner && ::fchown(fd.get(), keep.owner->first, keep.owner->second) != 0) {
    return failure("cannot keep the owner " + std::to_string(keep.owner->first) + ":" +
                       std::to_string(keep.owner->second) + " of",
                   target, errno) +
           "; not writing it";
  }
  const mode_t mode = keep.mode;
  if (::fchmod(fd.get(), mode) != 0) {
    return failure("cannot set the mode of", temp, errno);
  }
  if (::fsync(fd.get()) != 0) {
    return failure("cannot fsync", temp, errno);
  }
  if (const int error = fd.close_now(); error != 0) {
    return failure("cannot close", temp, error);
  }
  return std::nullopt;
}

}  // namespace

AtomicWrite write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  std::error_code ec;
  std::filesystem::path target = path;
  if (std::filesystem::is_symlink(path, ec)) {
    target = std::filesystem::canonical(path, ec);
    if (ec) {
      return {"cannot resolve " + path.string() + ": " + ec.message(), std::nullopt};
    }
  }
  Keep keep;
  struct stat existing {};
  if (::stat(target.c_str(), &existing) == 0) {
    const mode_t mode = existing.st_mode & kPermissionBits;
    keep.mode = mode;
    keep.owner.emplace(existing.st_uid, existing.st_gid);
    if ((mode & kWriteBits) == 0 || ::access(target.c_str(), W_OK) != 0) {
      return {target.string() + " is read-only (mode " + octal(mode) + "); not writing it",
              std::nullopt};
    }
  } else if (errno != ENOENT) {
    return {failure("cannot stat", target, errno), std::nullopt};
  }

  const std::filesystem::path directory =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string pattern = (directory / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  Descriptor fd(::mkstemp(name.data()));
  if (fd.get() < 0) {
    return {failure("cannot create a temporary file in", directory, errno), std::nullopt};
  }
  const std::filesystem::path temp(name.data());
  if (auto error = fill(fd, temp, contents, keep, target)) {
    static_cast<void>(::unlink(temp.c_str()));
    return {std::move(error), std::nullopt};
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int error = errno;
    static_cast<void>(::unlink(temp.c_str()));
    return {failure("cannot rename the temporary file over", target, error), std::nullopt};
  }
  // The rename is durable only once the directory entry is.
  Descriptor dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0 || ::fsync(dir.get()) != 0) {
    return {std::nullopt, failure("cannot fsync the directory", directory, errno)};
  }
  return {};
}

}  // namespace sluice::core
