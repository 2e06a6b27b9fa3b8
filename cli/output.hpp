// Where results go: a file chosen by extension, written atomically, or CSV text on stdout.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"

namespace gausskl::cli {

enum class Format { npy, npz, csv };

// An output opened before the computation starts, so that a bad path or an unwritable folder
// fails fast, and nothing appears under the name until commit().
class Output {
 public:
  // path "-" is stdout (CSV); "/dev/null" discards the results (in the first allowed format).
  // `allowed` lists the file formats the command writes, by extension in any case (out.NPY).
  // Throws std::invalid_argument for an extension not in `allowed`.
  Output(const std::string& path, const std::vector<Format>& allowed);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  Format format() const { return format_; }
  // The path, or "stdout", for messages.
  const std::string& name() const { return name_; }
  std::FILE* file();
  void commit();

 private:
  std::string path_, name_;
  Format format_;
  std::unique_ptr<io::AtomicFile> atomic_;  // empty for stdout and /dev/null
  std::FILE* null_ = nullptr;               // /dev/null
};

// A matrix [rows, cols] (cols = 0 means a vector [rows]) in the output's format, written in
// consecutive blocks of rows (the .npy header first: the shape is known up front), so that a
// pairwise matrix larger than memory never has to be held whole.
template <class U>
class MatrixWriter {
 public:
  MatrixWriter(Output& out, std::int64_t rows, std::int64_t cols);
  void append(std::int64_t rows, const U* data);

 private:
  Output& out_;
  std::int64_t cols_;
};

// knn results: .npz with `indices` and `name` (the kind: kl, jeffreys, ...) [N, K], or CSV lines
// "p,rank,q,NAME".
template <class U>
void write_knn(Output& out, std::int64_t rows, std::int64_t k, const std::int64_t* indices,
               const U* values, const char* name);

}  // namespace gausskl::cli
