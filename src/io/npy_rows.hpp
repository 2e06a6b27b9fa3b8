// The rows of a 2-D float32 / float64 array in a .npy file or an .npz entry, read a block of
// rows at a time, so that an array larger than memory can be streamed (gausskl fit).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/array.hpp"

namespace gausskl::io {

class NpyRows {
 public:
  virtual ~NpyRows() = default;

  // A .npy file, mapped into memory (mmap) and read in place: C or Fortran order, either byte
  // order. Errors as read_npy ("[read] path: ..."); an array that is not 2-D is one.
  static std::unique_ptr<NpyRows> open_npy(const std::string& path);
  // Entry `name` (without ".npy") of an .npz archive, inflated as it is read (a Fortran-order
  // entry is read whole first); name "": the archive's only entry. "[read] path: no array
  // 'name' (it holds 'a', 'b')" when absent.
  static std::unique_ptr<NpyRows> open_npz_entry(const std::string& path, const std::string& name);

  DType dtype() const { return dtype_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  // The file (and entry) in messages.
  const std::string& where() const { return where_; }

  // The next `count` rows (count <= rows left) into out, C order, native byte order: count x
  // cols() values of dtype().
  virtual void read(std::int64_t count, void* out) = 0;
  // After the last row: checks what can only be checked at the end (an entry's CRC-32).
  virtual void finish() {}

 protected:
  DType dtype_ = DType::float64;
  std::int64_t rows_ = 0, cols_ = 0;
  std::string where_;
};

}  // namespace gausskl::io
