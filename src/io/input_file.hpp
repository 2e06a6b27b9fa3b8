// A regular file opened for reading at any offset, and a ByteSource over its tail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "io/byte_source.hpp"

namespace gausskl::io {

class InputFile {
 public:
  // Throws std::invalid_argument("[read] path: ...") if the file cannot be opened or is not a
  // regular file (its size must be known before anything is parsed).
  explicit InputFile(std::string path);
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }

  // Reads exactly out.size() bytes starting at `offset`. Throws std::invalid_argument if they
  // reach past the end of the file, std::runtime_error if reading fails.
  void read_at(std::uint64_t offset, std::span<std::byte> out) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The bytes of `file` from `offset` to its end.
class FileSource final : public ByteSource {
 public:
  FileSource(const InputFile& file, std::uint64_t offset) : file_(file), pos_(offset) {}
  std::uint64_t remaining() const override { return file_.size() - pos_; }
  void read(std::span<std::byte> out) override {
    file_.read_at(pos_, out);
    pos_ += out.size();
  }

 private:
  const InputFile& file_;
  std::uint64_t pos_;
};

}  // namespace gausskl::io
