// NumPy .npz files: zip archives of .npy entries, from np.savez (stored) or
// np.savez_compressed (deflate, inflated through zlib). Zip64 records, as NumPy writes them,
// are understood. CRC-32 is checked. A declared size that deflate could not produce from the
// compressed size (a zip bomb or a lie) is an error before anything is allocated.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "io/array.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::io {

// Entries in archive order, names without the ".npy" suffix. Entries not ending in ".npy"
// are an error. Errors as for read_npy ("[read] path: entry 'x.npy': what"). With `allowance`,
// each entry's values are taken from it before they are allocated.
std::vector<std::pair<std::string, Array>> read_npz(const std::string& path,
                                                    MemoryAllowance* allowance = nullptr);

// Reads an archive held in memory; `where` names it in error messages.
std::vector<std::pair<std::string, Array>> parse_npz(std::span<const std::byte> bytes,
                                                     const std::string& where);

struct NpzEntry {
  std::string name;  // without ".npy"
  DType dtype;
  std::vector<std::int64_t> shape;
  const void* data;  // product(shape) elements of dtype
};

// Writes an uncompressed (stored) archive that np.load reads. Throws std::runtime_error if the
// write fails.
void write_npz(std::FILE* out, std::span<const NpzEntry> entries);

}  // namespace gausskl::io
