// Bytes readable at any offset, from a regular file or from memory, and a ByteSource over
// their tail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "io/byte_source.hpp"

namespace gausskl::io {

class RandomAccessInput {
 public:
  virtual ~RandomAccessInput() = default;

  // Names the bytes in error messages: the file's path, or what the caller called them.
  virtual const std::string& path() const = 0;
  virtual std::uint64_t size() const = 0;

  // Reads exactly out.size() bytes starting at `offset`. Throws std::invalid_argument if they
  // reach past the end, std::runtime_error if reading fails.
  void read_at(std::uint64_t offset, std::span<std::byte> out) const;

 private:
  // Called with a range already checked to lie inside size().
  virtual void read_inside(std::uint64_t offset, std::span<std::byte> out) const = 0;
};

class InputFile final : public RandomAccessInput {
 public:
  // Throws std::invalid_argument("[read] path: ...") if the file cannot be opened or is not a
  // regular file (its size must be known before anything is parsed).
  explicit InputFile(std::string path);
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() override;

  const std::string& path() const override { return path_; }
  std::uint64_t size() const override { return size_; }

 private:
  void read_inside(std::uint64_t offset, std::span<std::byte> out) const override;

  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Bytes held by the caller, who keeps them alive while this exists.
class MemoryInput final : public RandomAccessInput {
 public:
  MemoryInput(std::span<const std::byte> bytes, std::string where)
      : bytes_(bytes), where_(std::move(where)) {}

  const std::string& path() const override { return where_; }
  std::uint64_t size() const override { return bytes_.size(); }

 private:
  void read_inside(std::uint64_t offset, std::span<std::byte> out) const override;

  std::span<const std::byte> bytes_;
  std::string where_;
};

// The bytes of `input` from `offset` to its end.
class FileSource final : public ByteSource {
 public:
  FileSource(const RandomAccessInput& input, std::uint64_t offset) : input_(input), pos_(offset) {}
  std::uint64_t remaining() const override { return input_.size() - pos_; }
  void read(std::span<std::byte> out) override {
    input_.read_at(pos_, out);
    pos_ += out.size();
  }

 private:
  const RandomAccessInput& input_;
  std::uint64_t pos_;
};

}  // namespace gausskl::io
