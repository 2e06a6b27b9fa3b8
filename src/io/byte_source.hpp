// Where the bytes of a .npy image come from: memory, a file, or an entry of a zip archive.
// The .npy reader asks for exact byte counts and checks every claim against remaining()
// before it allocates, so one reader serves all three without copying the data twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>

namespace gausskl::io {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Bytes not read yet (for a zip entry: as declared by the archive).
  virtual std::uint64_t remaining() const = 0;
  // Fills `out` completely. Callers never ask for more than remaining().
  virtual void read(std::span<std::byte> out) = 0;
};

class SpanSource final : public ByteSource {
 public:
  explicit SpanSource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::uint64_t remaining() const override { return bytes_.size(); }
  void read(std::span<std::byte> out) override {
    if (out.size() > bytes_.size()) throw std::logic_error("SpanSource: read past the end");
    if (!out.empty()) std::memcpy(out.data(), bytes_.data(), out.size());
    bytes_ = bytes_.subspan(out.size());
  }

 private:
  std::span<const std::byte> bytes_;
};

}  // namespace gausskl::io
