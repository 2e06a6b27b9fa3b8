#include "io/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io_test_util.hpp"

namespace gausskl::io {
namespace {

using test::Contains;
using test::error_message;

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(AtomicFile& file, const std::string& text) {
  ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), file.file()), text.size());
}

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

TEST(AtomicFile, CommitCreatesTheFileWithNormalPermissions) {
  test::TempDir dir;
  const std::string path = dir.file("out.npy");
  {
    AtomicFile file(path);
    put(file, "hello");
    EXPECT_FALSE(std::filesystem::exists(path));  // not visible before commit
    file.commit();
  }
  EXPECT_EQ(contents(path), "hello");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"out.npy"});  // no temporary file left
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~current_umask());
}

TEST(AtomicFile, TemporaryFileIsHiddenBesideTheTarget) {
  test::TempDir dir;
  AtomicFile file(dir.file("out.csv"));
  const auto names = dir.names();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(names[0].starts_with(".out.csv.")) << names[0];
  EXPECT_TRUE(names[0].ends_with(".tmp")) << names[0];
}

TEST(AtomicFile, CommitReplacesAnExistingFile) {
  test::TempDir dir;
  const std::string path = dir.file("out.csv");
  std::ofstream(path) << "old";
  AtomicFile file(path);
  put(file, "new");
  file.commit();
  EXPECT_EQ(contents(path), "new");
}

TEST(AtomicFile, WithoutCommitNothingIsLeft) {
  test::TempDir dir;
  {
    AtomicFile file(dir.file("out.npy"));
    put(file, "partial");
  }
  EXPECT_TRUE(dir.names().empty());
}

TEST(AtomicFile, WithoutCommitAnExistingFileIsUntouched) {
  test::TempDir dir;
  const std::string path = dir.file("out.npy");
  std::ofstream(path) << "precious";
  {
    AtomicFile file(path);
    put(file, "partial");
  }
  EXPECT_EQ(contents(path), "precious");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"out.npy"});
}

TEST(AtomicFile, NonexistentFolderIsInvalidArgument) {
  test::TempDir dir;
  const std::string folder = dir.file("missing");
  const std::string path = folder + "/out.npy";
  const std::string message = error_message<std::invalid_argument>([&] { AtomicFile file(path); });
  EXPECT_EQ(message, "[write] " + path + ": folder '" + folder + "' does not exist");
}

TEST(AtomicFile, FolderThatIsAFileIsInvalidArgument) {
  test::TempDir dir;
  std::ofstream(dir.file("plain")) << "x";
  const std::string message = error_message<std::invalid_argument>(
      [&] { AtomicFile file(dir.file("plain") + "/out.npy"); });
  EXPECT_TRUE(Contains(message, dir.file("plain") + "' is not a folder"));
}

TEST(AtomicFile, TargetThatIsAFolderIsInvalidArgument) {
  test::TempDir dir;
  const std::string message =
      error_message<std::invalid_argument>([&] { AtomicFile file(dir.path().string()); });
  EXPECT_TRUE(Contains(message, ": is a folder"));
  EXPECT_TRUE(Contains(error_message<std::invalid_argument>([&] { AtomicFile file(dir.file("")); }),
                       "not a file name"));
}

TEST(AtomicFile, PathWithoutFolderUsesTheCurrentFolder) {
  test::TempDir dir;
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  {
    AtomicFile file("plain.csv");
    put(file, "1,2\n");
    file.commit();
  }
  std::filesystem::current_path(previous);
  EXPECT_EQ(contents(dir.file("plain.csv")), "1,2\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"plain.csv"});
}

TEST(AtomicFile, FailedCommitRemovesTheTemporaryFile) {
  test::TempDir dir;
  const std::string path = dir.file("out.npy");
  AtomicFile file(path);
  put(file, "data");
  // A non-empty folder now sits at the target name, so the final rename() must fail.
  std::filesystem::create_directory(path);
  std::ofstream(path + "/inside") << "x";
  const std::string message = error_message<std::runtime_error>([&] { file.commit(); });
  EXPECT_TRUE(Contains(message, "[write] " + path + ": "));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"out.npy"});
  EXPECT_TRUE(std::filesystem::is_directory(path));
}

TEST(AtomicFile, FailedWriteIsReportedAtCommit) {
  test::TempDir dir;
  const std::string path = dir.file("out.npy");
  AtomicFile file(path);
  // Reading from a write-only stream sets its error flag, as a failed write would.
  EXPECT_EQ(std::fgetc(file.file()), EOF);
  const std::string message = error_message<std::runtime_error>([&] { file.commit(); });
  EXPECT_TRUE(Contains(message, "[write] " + path + ": a write to the file failed"));
  EXPECT_TRUE(dir.names().empty());
}

}  // namespace
}  // namespace gausskl::io
