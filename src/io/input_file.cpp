#include "io/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "io/io_error.hpp"

namespace gausskl::io {

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  // O_NONBLOCK: opening a named pipe with no writer would otherwise hang before the regular
  // file check below; reads from a regular file ignore the flag.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw_read_error(path_, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw_read_failure(path_, error);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw_read_error(path_,
                     S_ISDIR(st.st_mode) ? "is a folder, not a file" : "is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  ::close(fd_);
}

void RandomAccessInput::read_at(std::uint64_t offset, std::span<std::byte> out) const {
  if (offset > size() || out.size() > size() - offset) {
    throw_read_error(path(), "unexpected end of file");
  }
  read_inside(offset, out);
}

void InputFile::read_inside(std::uint64_t offset, std::span<std::byte> out) const {
  // pread may return fewer bytes than asked (signals, very large requests): loop.
  constexpr std::size_t kMaxChunk = std::size_t{1} << 30;
  std::size_t done = 0;
  while (done < out.size()) {
    const std::size_t want = std::min(out.size() - done, kMaxChunk);
    const ssize_t got = ::pread(fd_, out.data() + done, want, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_read_failure(path_, errno);
    }
    // The file shrank after we measured it: not its content's fault, so a runtime_error.
    if (got == 0)
      throw std::runtime_error("[read] " + path_ + ": the file changed while being read");
    done += static_cast<std::size_t>(got);
  }
}

void MemoryInput::read_inside(std::uint64_t offset, std::span<std::byte> out) const {
  if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
}

}  // namespace gausskl::io
