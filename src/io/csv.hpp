// Comma-separated text.
//
// Reading: one row per line, values separated by commas (spaces around them allowed); lines
// that are empty or start with '#' are skipped; every row must have the same number of values.
// Returns a 2-D float64 array [rows, columns]. Errors name the line and column:
// "[read] path: line 3, column 2: 'abc' is not a number".
// Writing: one row per line, shortest text that reads back to the same value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "io/array.hpp"

namespace gausskl::io {

Array read_csv(const std::string& path);

// Parses CSV text held in memory; `where` names it in error messages.
Array parse_csv(std::string_view text, const std::string& where);

// Writes rows x cols values, row-major. Throws std::runtime_error if the write fails.
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const float* data);
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const double* data);
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const std::int64_t* data);

}  // namespace gausskl::io
