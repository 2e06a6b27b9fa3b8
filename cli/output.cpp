#include "cli/output.hpp"

#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "cli/file_names.hpp"
#include "io/csv.hpp"
#include "io/npy.hpp"
#include "io/npy_header.hpp"
#include "io/npz.hpp"
#include "io/write_all.hpp"

namespace gausskl::cli {
namespace {

const char* format_name(Format f) {
  switch (f) {
    case Format::npy:
      return ".npy";
    case Format::npz:
      return ".npz";
    case Format::csv:
      return ".csv";
  }
  return "?";
}

template <class U>
constexpr io::DType dtype_of() {
  return sizeof(U) == 4 ? io::DType::float32 : io::DType::float64;
}

void check_write(const Output& out, std::FILE* f, int result) {
  if (result < 0 || std::ferror(f)) {
    throw std::runtime_error("[write] " + out.name() + ": writing failed");
  }
}

// Runs a write through the file layer, whose messages name the format; adds the path.
template <class Write>
void naming_the_file(const Output& out, Write&& write) {
  try {
    write();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + " (writing " + out.name() + ")");
  }
}

}  // namespace

Output::Output(const std::string& path, const std::vector<Format>& allowed)
    : path_(path), name_(path == "-" ? "stdout" : path) {
  if (path == "-") {
    format_ = Format::csv;
    return;
  }
  if (path == "/dev/null") {
    // A benchmark's habit: the results are computed and written in the command's first format
    // to a file that keeps nothing (no temporary beside it: /dev is not ours to write in).
    format_ = allowed.front();
    null_ = std::fopen("/dev/null", "wb");
    if (!null_) throw std::runtime_error("[write] /dev/null: cannot open it");
    return;
  }
  std::string names;
  for (Format f : allowed) {
    names += std::string(names.empty() ? "" : ", ") + format_name(f);
    if (has_extension(path, format_name(f))) {
      format_ = f;
      atomic_ = std::make_unique<io::AtomicFile>(path);
      return;
    }
  }
  throw std::invalid_argument("[write] " + path + ": this command writes " + names +
                              " files, or - for CSV on stdout");
}

Output::~Output() {
  if (null_) std::fclose(null_);
}

std::FILE* Output::file() {
  if (null_) return null_;
  return atomic_ ? atomic_->file() : stdout;
}

void Output::commit() {
  if (null_) {
    std::fflush(null_);
  } else if (atomic_) {
    atomic_->commit();
  } else if (std::fflush(stdout) != 0) {
    throw std::runtime_error("[write] writing to stdout failed");
  }
}

template <class U>
MatrixWriter<U>::MatrixWriter(Output& out, std::int64_t rows, std::int64_t cols)
    : out_(out), cols_(cols) {
  if (out.format() != Format::npy) return;
  std::vector<std::int64_t> shape{rows};
  if (cols > 0) shape.push_back(cols);
  const io::NpyPreamble preamble = io::make_npy_preamble(dtype_of<U>(), shape);
  io::write_all(out.file(), preamble.bytes.data(), preamble.bytes.size(), out.name());
}

template <class U>
void MatrixWriter<U>::append(std::int64_t rows, const U* data) {
  const std::int64_t cols = cols_ > 0 ? cols_ : 1;
  if (out_.format() == Format::npy) {
    io::write_all(out_.file(), data, static_cast<std::size_t>(rows * cols) * sizeof(U),
                  out_.name());
  } else {
    naming_the_file(out_, [&] { io::write_csv(out_.file(), rows, cols, data); });
  }
}

template <class U>
void write_knn(Output& out, std::int64_t rows, std::int64_t k, const std::int64_t* indices,
               const U* values, const char* name) {
  if (out.format() == Format::npz) {
    const std::vector<io::NpzEntry> entries = {
        {"indices", io::DType::int64, {rows, k}, indices},
        {name, dtype_of<U>(), {rows, k}, values},
    };
    naming_the_file(out, [&] { io::write_npz(out.file(), entries); });
    return;
  }
  std::FILE* f = out.file();
  check_write(out, f, std::fprintf(f, "p,rank,q,%s\n", name));
  char value[64];
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t r = 0; r < k; ++r) {
      auto [end, ec] = std::to_chars(value, value + sizeof value, values[i * k + r]);
      *end = '\0';
      check_write(out, f,
                  std::fprintf(f, "%lld,%lld,%lld,%s\n", static_cast<long long>(i),
                               static_cast<long long>(r),
                               static_cast<long long>(indices[i * k + r]), value));
    }
  }
}

template class MatrixWriter<float>;
template class MatrixWriter<double>;
template void write_knn<float>(Output&, std::int64_t, std::int64_t, const std::int64_t*,
                               const float*, const char*);
template void write_knn<double>(Output&, std::int64_t, std::int64_t, const std::int64_t*,
                                const double*, const char*);

}  // namespace gausskl::cli
