#include "io/npy_rows.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "io/byte_source.hpp"
#include "io/input_file.hpp"
#include "io/io_error.hpp"
#include "io/npy_header.hpp"
#include "io/npy_image.hpp"
#include "io/zip_directory.hpp"
#include "io/zip_entry_source.hpp"

namespace gausskl::io {
namespace {

void swap_bytes(std::byte* data, std::int64_t count, std::int64_t size) {
  for (std::int64_t k = 0; k < count; ++k)
    std::reverse(data + k * size, data + (k + 1) * size);
}

// The header's shape as rows x cols; a 2-D array only.
void take_shape(const NpyHeader& header, const std::string& where, std::int64_t& rows,
                std::int64_t& cols) {
  if (header.shape.size() != 2) {
    throw_read_error(where, "expected a 2-D array [N, D] (N rows of D features), found shape " +
                                shape_text(header.shape));
  }
  rows = header.shape[0];
  cols = header.shape[1];
}

// Rows of values laid out in memory (a mapped file, or an entry read whole), C or Fortran order.
class InPlaceRows : public NpyRows {
 protected:
  void set(const NpyHeader& header, const std::byte* data) {
    dtype_ = header.dtype;
    fortran_ = header.fortran_order;
    swap_ = header.big_endian != (std::endian::native == std::endian::big);
    data_ = data;
  }

 public:
  void read(std::int64_t count, void* out) override {
    const std::int64_t size = dtype_size(dtype_);
    auto* to = static_cast<std::byte*>(out);
    if (!fortran_) {
      std::memcpy(to, data_ + next_ * cols_ * size, static_cast<std::size_t>(count * cols_ * size));
    } else {
      // Element (r, c) at r + c * rows: each column's piece of the block is contiguous.
      for (std::int64_t c = 0; c < cols_; ++c) {
        const std::byte* from = data_ + (c * rows_ + next_) * size;
        for (std::int64_t r = 0; r < count; ++r)
          std::memcpy(to + (r * cols_ + c) * size, from + r * size, static_cast<std::size_t>(size));
      }
    }
    if (swap_) swap_bytes(to, count * cols_, size);
    next_ += count;
  }

 private:
  const std::byte* data_ = nullptr;
  bool fortran_ = false, swap_ = false;
  std::int64_t next_ = 0;
};

class MappedNpy final : public InPlaceRows {
 public:
  explicit MappedNpy(const std::string& path) {
    where_ = path;
    const InputFile file(path);  // the checks and messages of every reader: exists, regular
    size_ = file.size();
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw_read_error(path, std::strerror(errno));
    if (size_ > 0) {
      void* map = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (map == MAP_FAILED) {
        const int error = errno;
        ::close(fd_);
        throw_read_failure(path, error);
      }
      map_ = static_cast<const std::byte*>(map);
      ::madvise(map, size_, MADV_SEQUENTIAL);
    }
    try {
      SpanSource source(std::span<const std::byte>(map_, size_));
      std::int64_t count = 0, bytes = 0;
      const NpyHeader header = read_npy_preamble(source, path, count, bytes);
      take_shape(header, path, rows_, cols_);
      set(header, map_ + (size_ - source.remaining()));
    } catch (...) {
      release();
      throw;
    }
  }
  ~MappedNpy() override { release(); }

 private:
  void release() noexcept {
    if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
    if (fd_ >= 0) ::close(fd_);
    map_ = nullptr;
    fd_ = -1;
  }

  int fd_ = -1;
  std::size_t size_ = 0;
  const std::byte* map_ = nullptr;
};

// An .npz entry: the archive's directory and the entry's source, kept for the reads.
struct Entry {
  std::unique_ptr<InputFile> file;
  ZipDirectory directory;
  std::unique_ptr<ZipEntrySource> source;
};

Entry open_entry(const std::string& path, const std::string& name, std::string& where) {
  Entry e;
  e.file = std::make_unique<InputFile>(path);
  e.directory = read_zip_directory(*e.file);
  std::string names;
  const bool only = name.empty() && e.directory.entries.size() == 1;
  for (const ZipEntry& entry : e.directory.entries) {
    if (entry.name == name + ".npy" || only) {
      where = path + ": entry " + quote_for_message(entry.name);
      const std::uint64_t offset = zip_entry_data_offset(*e.file, e.directory, entry, where);
      e.source = std::make_unique<ZipEntrySource>(*e.file, entry, offset, where);
      return e;
    }
    std::string shown =
        entry.name.ends_with(".npy") ? entry.name.substr(0, entry.name.size() - 4) : entry.name;
    names += (names.empty() ? "'" : ", '") + shorten_for_message(shown) + "'";
  }
  if (name.empty()) {
    throw_read_error(path, "holds " + (names.empty() ? std::string("no array") : names) +
                               ": name the array to read, " + path + ":NAME");
  }
  throw_read_error(path, "no array " + quote_for_message(name) + " (it holds " +
                             (names.empty() ? std::string("none") : names) + ")");
}

class StreamedEntry final : public NpyRows {
 public:
  StreamedEntry(Entry entry, const NpyHeader& header, const std::string& where)
      : entry_(std::move(entry)),
        swap_(header.big_endian != (std::endian::native == std::endian::big)) {
    where_ = where;
    dtype_ = header.dtype;
    take_shape(header, where, rows_, cols_);
  }
  void read(std::int64_t count, void* out) override {
    const std::int64_t bytes = count * cols_ * dtype_size(dtype_);
    entry_.source->read(std::span(static_cast<std::byte*>(out), static_cast<std::size_t>(bytes)));
    if (swap_) swap_bytes(static_cast<std::byte*>(out), count * cols_, dtype_size(dtype_));
  }
  void finish() override { entry_.source->finish(); }

 private:
  Entry entry_;
  bool swap_;
};

// A Fortran-order entry: its columns are not streamed in rows, so it is read whole.
class WholeEntry final : public InPlaceRows {
 public:
  WholeEntry(Entry entry, const NpyHeader& header, std::int64_t bytes, const std::string& where) {
    where_ = where;
    take_shape(header, where, rows_, cols_);
    data_.resize(static_cast<std::size_t>(bytes));
    entry.source->read(data_);
    entry.source->finish();
    set(header, data_.data());
  }

 private:
  std::vector<std::byte> data_;
};

}  // namespace

std::unique_ptr<NpyRows> NpyRows::open_npy(const std::string& path) {
  return std::make_unique<MappedNpy>(path);
}

std::unique_ptr<NpyRows> NpyRows::open_npz_entry(const std::string& path, const std::string& name) {
  std::string where;
  Entry entry = open_entry(path, name, where);
  std::int64_t count = 0, bytes = 0;
  const NpyHeader header = read_npy_preamble(*entry.source, where, count, bytes);
  if (header.fortran_order && header.shape.size() == 2) {
    return std::make_unique<WholeEntry>(std::move(entry), header, bytes, where);
  }
  return std::make_unique<StreamedEntry>(std::move(entry), header, where);
}

}  // namespace gausskl::io
