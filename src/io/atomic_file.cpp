#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace gausskl::io {
namespace {

// umask() can only be read by setting it. Read it once, on first use, so the window in which
// it is 0 cannot overlap a later file creation in this process.
mode_t process_umask() {
  static const mode_t mask = [] {
    const mode_t old = ::umask(0);
    ::umask(old);
    return old;
  }();
  return mask;
}

// Makes the rename itself durable. Failing here is not reported: the file is complete and
// in place, only a crash in the next moments could lose the new name.
void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The folder part of `path` including its trailing '/', or "" if there is none.
std::string folder_prefix(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument("[write] " + path_ + ": " + what);
  };
  const std::string prefix = folder_prefix(path_);
  const std::string name = path_.substr(prefix.size());
  if (name.empty()) fail("not a file name");
  // The folder as the user wrote it, without the trailing '/' (so that stat() reports a plain
  // file there as such rather than failing).
  const std::string folder = prefix.empty()       ? "."
                             : prefix.size() == 1 ? prefix
                                                  : prefix.substr(0, prefix.size() - 1);

  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) fail("folder '" + folder + "' does not exist");
    fail("folder '" + folder + "': " + std::strerror(error));
  }
  if (!S_ISDIR(st.st_mode)) fail("'" + folder + "' is not a folder");
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail("is a folder");

  // Same folder as the target, so rename() stays on one file system and is atomic.
  temp_path_ = prefix + "." + name + ".XXXXXX.tmp";
  const HandledSignalsBlocked blocked;
  const int fd = ::mkstemps(temp_path_.data(), 4);
  if (fd < 0) {
    throw std::runtime_error("[write] " + path_ +
                             ": cannot create a temporary file: " + std::strerror(errno));
  }
  // mkstemp creates the file 0600; give the result the permissions any new file would get.
  if (::fchmod(fd, 0666 & ~process_umask()) != 0 || (file_ = ::fdopen(fd, "wb")) == nullptr) {
    const int error = errno;
    ::close(fd);
    ::unlink(temp_path_.c_str());
    throw std::runtime_error("[write] " + path_ + ": " + std::strerror(error));
  }
  try {
    registration_ = register_temporary(temp_path_);
  } catch (const std::runtime_error& e) {
    std::fclose(std::exchange(file_, nullptr));
    ::unlink(temp_path_.c_str());
    throw std::runtime_error("[write] " + path_ + ": " + e.what());
  }
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (registration_ >= 0) remove_temporary();
}

void AtomicFile::remove_temporary() {
  ::unlink(temp_path_.c_str());
  unregister_temporary(std::exchange(registration_, -1));
}

void AtomicFile::commit() {
  if (file_ == nullptr) throw std::logic_error("[write] " + path_ + ": commit() called twice");
  std::FILE* file = std::exchange(file_, nullptr);
  // A write that failed earlier leaves the error flag set even if nobody checked it.
  std::string failure = std::ferror(file) ? "a write to the file failed" : "";
  if (failure.empty() && (std::fflush(file) != 0 || ::fsync(::fileno(file)) != 0)) {
    failure = std::strerror(errno);
  }
  if (std::fclose(file) != 0 && failure.empty()) failure = std::strerror(errno);
  if (failure.empty() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    failure = std::strerror(errno);
  }
  if (!failure.empty()) {
    remove_temporary();
    throw std::runtime_error("[write] " + path_ + ": " + failure);
  }
  // Unregistered only now: a signal before the rename must still find the temporary file.
  unregister_temporary(std::exchange(registration_, -1));
  const std::string prefix = folder_prefix(path_);
  sync_folder(prefix.empty() ? "." : prefix);
}

}  // namespace gausskl::io
