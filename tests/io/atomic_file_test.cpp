#include "io/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>

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

// Runs `child` in a forked process and returns its wait status. The child never returns into
// the test framework: it ends by a signal or by _exit(0) when `child` returns.
template <typename F>
int wait_status_of(F&& child) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    child();
    ::_exit(0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

class AtomicFileSignal : public ::testing::TestWithParam<int> {};

TEST_P(AtomicFileSignal, RemovesTemporaryFilesThenDiesBySignal) {
  const int signal = GetParam();
  test::TempDir dir;
  std::ofstream(dir.file("out.npy")) << "precious";
  std::ofstream(dir.file("done.csv")) << "old";
  const int status = wait_status_of([&] {
    remove_temporaries_on_signal();
    AtomicFile done(dir.file("done.csv"));
    put(done, "committed");
    done.commit();
    AtomicFile first(dir.file("out.npy"));
    AtomicFile second(dir.file("other.npy"));
    put(first, "partial");
    ::raise(signal);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "wait status " << status;
  EXPECT_EQ(WTERMSIG(status), signal);
  auto names = dir.names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"done.csv", "out.npy"}));
  EXPECT_EQ(contents(dir.file("out.npy")), "precious");
  EXPECT_EQ(contents(dir.file("done.csv")), "committed");
}

INSTANTIATE_TEST_SUITE_P(Signals, AtomicFileSignal,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGXFSZ),
                         [](const auto& param) { return std::string(sigabbrev_np(param.param)); });

TEST(AtomicFile, SignalIgnoredBeforeInstallingStaysIgnored) {
  test::TempDir dir;
  const int status = wait_status_of([&] {
    std::signal(SIGHUP, SIG_IGN);
    remove_temporaries_on_signal();
    AtomicFile file(dir.file("out.npy"));
    ::raise(SIGHUP);
    put(file, "survived");
    file.commit();
  });
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(contents(dir.file("out.npy")), "survived");
}

TEST(AtomicFile, TooManyAtOnceIsRuntimeErrorAndLeavesNothing) {
  test::TempDir dir;
  std::vector<std::unique_ptr<AtomicFile>> files;
  for (int i = 0; i < 64; ++i)
    files.push_back(std::make_unique<AtomicFile>(dir.file(std::to_string(i))));
  const std::string path = dir.file("one_more");
  const std::string message = error_message<std::runtime_error>([&] { AtomicFile file(path); });
  EXPECT_EQ(message, "[write] " + path + ": more than 64 output files are being written at once");
  EXPECT_EQ(dir.names().size(), 64u);
  files.pop_back();  // frees a slot
  AtomicFile file(path);
  files.clear();
  EXPECT_EQ(dir.names().size(), 1u);
}

}  // namespace
}  // namespace gausskl::io
