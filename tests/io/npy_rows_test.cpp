// io::NpyRows: a .npy (mapped) and an .npz entry (streamed) read back in blocks of rows, equal to
// what was written; the rules (2-D only, a missing or unnamed entry).
#include "io/npy_rows.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "io/npy.hpp"
#include "io/npz.hpp"
#include "io_test_util.hpp"

namespace gausskl::io::test {
namespace {

std::vector<double> read_in_blocks(NpyRows& rows, std::int64_t block) {
  std::vector<double> out(static_cast<std::size_t>(rows.rows() * rows.cols()));
  for (std::int64_t r = 0; r < rows.rows(); r += block) {
    const std::int64_t count = std::min(block, rows.rows() - r);
    rows.read(count, out.data() + r * rows.cols());
  }
  rows.finish();
  return out;
}

TEST(NpyRows, NpyAndNpzEntryReadBackInBlocks) {
  TempDir dir;
  const std::vector<std::int64_t> shape = {7, 3};
  std::vector<double> values(21);
  for (std::size_t k = 0; k < values.size(); ++k)
    values[k] = 0.5 * static_cast<double>(k) - 3;
  {
    std::FILE* f = std::fopen(dir.file("x.npy").c_str(), "wb");
    write_npy(f, DType::float64, shape, values.data());
    std::fclose(f);
    f = std::fopen(dir.file("x.npz").c_str(), "wb");
    const std::vector<NpzEntry> entries = {{"a", DType::float64, {2}, values.data()},
                                           {"x", DType::float64, shape, values.data()}};
    write_npz(f, entries);
    std::fclose(f);
  }
  const auto npy = NpyRows::open_npy(dir.file("x.npy"));
  EXPECT_EQ(npy->rows(), 7);
  EXPECT_EQ(npy->cols(), 3);
  EXPECT_EQ(npy->dtype(), DType::float64);
  EXPECT_EQ(read_in_blocks(*npy, 3), values);
  const auto npz = NpyRows::open_npz_entry(dir.file("x.npz"), "x");
  EXPECT_EQ(read_in_blocks(*npz, 2), values);

  EXPECT_EQ(error_message<std::invalid_argument>(
                [&] { NpyRows::open_npz_entry(dir.file("x.npz"), "y"); }),
            "[read] " + dir.file("x.npz") + ": no array 'y' (it holds 'a', 'x')");
  EXPECT_EQ(
      error_message<std::invalid_argument>([&] { NpyRows::open_npz_entry(dir.file("x.npz"), ""); }),
      "[read] " + dir.file("x.npz") + ": holds 'a', 'x': name the array to read, " +
          dir.file("x.npz") + ":NAME");
  EXPECT_EQ(error_message<std::invalid_argument>(
                [&] { NpyRows::open_npz_entry(dir.file("x.npz"), "a"); }),
            "[read] " + dir.file("x.npz") +
                ": entry 'a.npy': expected a 2-D array [N, D] (N rows of D features), found "
                "shape (2,)");
}

}  // namespace
}  // namespace gausskl::io::test
