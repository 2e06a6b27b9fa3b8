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
#include "io/memory_allowance.hpp"

namespace gausskl::io {

// With `allowance`, the text's bytes and room for the values it can hold (one per comma or line)
// are taken from it before they are allocated; the text's are given back once it is parsed.
Array read_csv(const std::string& path, MemoryAllowance* allowance = nullptr);

// Parses CSV text held in memory; `where` names it in error messages.
Array parse_csv(std::string_view text, const std::string& where,
                MemoryAllowance* allowance = nullptr);

// Writes rows x cols values, row-major. Throws std::runtime_error if the write fails.
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const float* data);
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const double* data);
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const std::int64_t* data);

}  // namespace gausskl::io
