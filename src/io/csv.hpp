// Delimited text, as np.savetxt and spreadsheets write it.
//
// Reading: one row per line; values separated by commas, tabs or runs of spaces, one kind per
// file (the first row's: see csv_fields.hpp), blanks around them allowed; lines that are empty
// or start with '#' are skipped; every row must have the same number of values. The first row
// is a header when every field of it is a name (it starts with a letter or '_' and is not a
// number such as nan or inf), or when its first field is empty and the others are names or the
// numbers 0, 1, 2, ...: pandas' DataFrame.to_csv, whose first column holds the row labels
// (its index), which are then skipped. Errors name the line and column:
// "[read] path: line 3, column 2: 'abc' is not a number".
// Writing: one row per line, shortest text that reads back to the same value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "io/array.hpp"
#include "io/csv_fields.hpp"
#include "io/memory_allowance.hpp"

namespace gausskl::io {

// Column names and the line they are on (0 and none: there are none).
struct CsvNames {
  std::vector<std::string> names;
  std::int64_t line = 0;
  std::int64_t first_column = 1;  // the file's column of names[0] (2 after pandas' row labels)
};

struct CsvTable {
  CsvNames header;  // the header row, without the empty name of pandas' row labels
  // The header's first field was empty: column 1 held row labels and is not in `values`.
  bool row_labels = false;
  // Without a header row: the names of the '#' line right above the first row, if every
  // field of it (after the '#', split at commas, tabs or spaces) is a name and there is one
  // per column, as np.savetxt(header=...) writes them. Only a caller that needs names should
  // use them.
  CsvNames comment;
  Array values;  // [rows, columns], float64, the header excluded
};

// Parses a CSV file's text in pieces, each ending at a line end (or the file's end), so that a
// file larger than memory can be streamed (gausskl fit): the rules and messages above, with
// line numbers counted across the pieces.
class CsvRowParser {
 public:
  explicit CsvRowParser(std::string where);
  // Appends each row's values (the header and pandas' row labels excluded) to `values`;
  // returns the number of rows added.
  std::int64_t feed(std::string_view text, std::vector<double>& values);
  std::int64_t rows() const { return rows_; }
  std::int64_t columns() const;  // of values; 0 before the first row
  const std::string& where() const { return where_; }
  // The table of all rows fed, their values in `values`; "no values" is an error.
  CsvTable finish(std::vector<double>&& values);

 private:
  std::string where_;
  CsvTable table_;
  CsvSeparator separator_ = CsvSeparator::comma;
  std::string last_comment_;  // a copy: the piece it was in may be gone
  std::int64_t rows_ = 0, columns_ = -1, first_line_ = 0, line_number_ = 0, comment_line_ = 0;
};

// With `allowance`, the text's bytes and room for the values it can hold (one per run of
// characters that are not separators) are taken from it before they are allocated; the
// text's are given back once it is parsed.
CsvTable read_csv_table(const std::string& path, MemoryAllowance* allowance = nullptr);

// Parses CSV text held in memory; `where` names it in error messages.
CsvTable parse_csv_table(std::string_view text, const std::string& where,
                         MemoryAllowance* allowance = nullptr);

// Writes rows x cols values, row-major. Throws std::runtime_error if the write fails.
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const float* data);
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const double* data);
void write_csv(std::FILE* out, std::int64_t rows, std::int64_t cols, const std::int64_t* data);

}  // namespace gausskl::io
