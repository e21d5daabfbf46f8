// SPDX-License-Identifier: Apache-2.0
// write_file_atomically: the old file or the new one, never a mix, and no litter.
#include "gateway/core/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::core {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sluice-atomic-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(directory_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(directory_, ignored);
  }

  static std::string contents(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }
  static void write(const fs::path& path, std::string_view text) { std::ofstream(path) << text; }
  /// Names in the directory (to see that no temporary file is left behind).
  [[nodiscard]] std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(directory_), fs::directory_iterator()));
  }
  static unsigned mode_of(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 07777U;
  }

  fs::path directory_;
};

TEST_F(AtomicFileTest, ReplacesTheFileAndKeepsItsMode) {
  const auto path = directory_ / "sluice.json";
  write(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  const auto result = write_file_atomically(path, "new contents\n");
  EXPECT_FALSE(result.error) << *result.error;
  EXPECT_FALSE(result.warning);
  EXPECT_EQ(contents(path), "new contents\n");
  EXPECT_EQ(mode_of(path), 0640U);
  EXPECT_EQ(entries(), 1U);
}

TEST_F(AtomicFileTest, CreatesAMissingFileWithMode0644) {
  const auto path = directory_ / "new.json";
  const auto result = write_file_atomically(path, "{}");
  EXPECT_FALSE(result.error);
  EXPECT_EQ(contents(path), "{}");
  EXPECT_EQ(mode_of(path), 0644U);
}

TEST_F(AtomicFileTest, KeepsTheOwnerAndGroupOfTheFile) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root can give a file to another owner to start with";
  }
  const auto path = directory_ / "sluice.json";
  write(path, "old");
  ASSERT_EQ(::chown(path.c_str(), 12345, 23456), 0);
  const auto result = write_file_atomically(path, "new");
  EXPECT_FALSE(result.error) << *result.error;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 12345U);
  EXPECT_EQ(st.st_gid, 23456U);
  EXPECT_EQ(contents(path), "new");
}

TEST_F(AtomicFileTest, RefusesAFileWhoseOwnerItCannotKeep) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root can set up a writable file of another user";
  }
  // Someone else's file that this process may write but not give away: an unprivileged
  // process (a child that dropped to nobody) must not take it over by replacing it.
  const auto path = directory_ / "sluice.json";
  write(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(directory_.c_str(), 0777), 0);
  EXPECT_EXIT(
      {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
          std::_Exit(2);
        }
        const auto result = write_file_atomically(path, "new");
        const bool refused =
            result.error &&
            result.error->starts_with("cannot keep the owner 0:0 of " + path.string() + ": ");
        std::_Exit(refused ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(contents(path), "old");
  EXPECT_EQ(entries(), 1U);  // the temporary file is gone
}

TEST_F(AtomicFileTest, RefusesAFileWithoutWritePermissionEvenForRoot) {
  const auto path = directory_ / "sluice.json";
  write(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  const auto result = write_file_atomically(path, "new");
  ASSERT_TRUE(result.error);
  EXPECT_EQ(*result.error, path.string() + " is read-only (mode 0444); not writing it");
  EXPECT_EQ(contents(path), "old");
  EXPECT_EQ(entries(), 1U);
}

TEST_F(AtomicFileTest, FailsCleanlyWhenTheRenameCannotHappen) {
  // A directory in the file's place: the temporary file is written, the rename fails (EISDIR).
  const auto path = directory_ / "sluice.json";
  fs::create_directory(path);
  write(path / "keep", "x");
  const auto result = write_file_atomically(path, "new");
  ASSERT_TRUE(result.error);
  EXPECT_NE(result.error->find("cannot rename the temporary file over"), std::string::npos)
      << *result.error;
  EXPECT_EQ(entries(), 1U);  // the temporary file was removed
  EXPECT_TRUE(fs::is_directory(path));
}

TEST_F(AtomicFileTest, ReportsAMissingDirectory) {
  const auto result = write_file_atomically(directory_ / "missing" / "sluice.json", "x");
  ASSERT_TRUE(result.error);
  EXPECT_NE(result.error->find("cannot create a temporary file in"), std::string::npos);
}

TEST_F(AtomicFileTest, WritesThroughASymbolicLinkAndKeepsTheLink) {
  const auto target = directory_ / "real.json";
  const auto link = directory_ / "sluice.json";
  write(target, "old");
  fs::create_symlink(target, link);
  const auto result = write_file_atomically(link, "new");
  EXPECT_FALSE(result.error);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(contents(target), "new");
}

}  // namespace
}  // namespace sluice::core
