// NumPy .npz files: zip archives of .npy entries, from np.savez (stored) or
// np.savez_compressed (deflate, inflated through zlib). Zip64 records, as NumPy writes them,
// are understood. CRC-32 is checked. A declared size that deflate could not produce from the
// compressed size (a zip bomb or a lie) is an error before anything is allocated.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
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

// Which entries to read, by name without ".npy". Files as users have them hold other arrays
// too (labels, weights, of any dtype): those are skipped unread, so their content cannot fail.
using NpzSelect = std::function<bool(std::string_view name)>;

struct NpzContents {
  std::vector<std::pair<std::string, Array>> arrays;  // the selected entries, in archive order
  std::vector<std::string> skipped;                   // the others' names, in archive order
};

// As read_npz, but only the entries `select` accepts are read; the others' names and places
// are still checked (the archive must be well formed), their data is not.
NpzContents read_npz(const std::string& path, const NpzSelect& select,
                     MemoryAllowance* allowance = nullptr);
NpzContents parse_npz(std::span<const std::byte> bytes, const std::string& where,
                      const NpzSelect& select);

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
