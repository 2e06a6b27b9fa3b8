#include <set>

#include "io/input_file.hpp"
#include "io/io_error.hpp"
#include "io/npy_image.hpp"
#include "io/npz.hpp"
#include "io/zip_directory.hpp"
#include "io/zip_entry_source.hpp"

namespace gausskl::io {
namespace {

constexpr std::string_view kSuffix = ".npy";

std::string entry_where(const std::string& path, const ZipEntry& entry) {
  return path + ": entry " + quote_for_message(entry.name);
}

NpzContents read_archive(const RandomAccessInput& file, const NpzSelect& select,
                         MemoryAllowance* allowance) {
  const std::string& path = file.path();
  const ZipDirectory directory = read_zip_directory(file);

  // Check every name and where each entry lies before reading any data, so a bad archive fails
  // fast and cheaply.
  std::set<std::string_view> seen;
  std::vector<std::uint64_t> data_offsets;
  data_offsets.reserve(directory.entries.size());
  for (const auto& entry : directory.entries) {
    const std::string where = entry_where(path, entry);
    if (!entry.name.ends_with(kSuffix)) {
      throw_read_error(where, "not a .npy array (entry names must end in '.npy')");
    }
    if (!seen.insert(entry.name).second) {
      throw_read_error(where, "the name appears twice in the archive");
    }
    data_offsets.push_back(zip_entry_data_offset(file, directory, entry, where));
  }
  check_entries_apart(directory, data_offsets, path);

  NpzContents contents;
  contents.arrays.reserve(directory.entries.size());
  for (std::size_t i = 0; i < directory.entries.size(); ++i) {
    const ZipEntry& entry = directory.entries[i];
    std::string name = entry.name.substr(0, entry.name.size() - kSuffix.size());
    if (select && !select(name)) {
      contents.skipped.push_back(std::move(name));
      continue;
    }
    const std::string where = entry_where(path, entry);
    ZipEntrySource source(file, entry, data_offsets[i], where);
    source.prove_declared_size();
    Array array = read_npy_image(source, where, allowance);
    source.finish();
    contents.arrays.emplace_back(std::move(name), std::move(array));
  }
  return contents;
}

}  // namespace

std::vector<std::pair<std::string, Array>> read_npz(const std::string& path,
                                                    MemoryAllowance* allowance) {
  return read_archive(InputFile(path), nullptr, allowance).arrays;
}

std::vector<std::pair<std::string, Array>> parse_npz(std::span<const std::byte> bytes,
                                                     const std::string& where) {
  return read_archive(MemoryInput(bytes, where), nullptr, nullptr).arrays;
}

NpzContents read_npz(const std::string& path, const NpzSelect& select, MemoryAllowance* allowance) {
  return read_archive(InputFile(path), select, allowance);
}

NpzContents parse_npz(std::span<const std::byte> bytes, const std::string& where,
                      const NpzSelect& select) {
  return read_archive(MemoryInput(bytes, where), select, nullptr);
}

}  // namespace gausskl::io
