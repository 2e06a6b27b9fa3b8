#include "io/csv_fields.hpp"

#include "io/io_error.hpp"

namespace gausskl::io {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

const char* plural(CsvSeparator separator) {
  switch (separator) {
    case CsvSeparator::comma:
      return "commas";
    case CsvSeparator::tab:
      return "tabs";
    case CsvSeparator::spaces:
      return "spaces";
  }
  return "?";
}

// The separator characters a field of this kind of file must not hold.
std::string_view foreign(CsvSeparator separator) {
  switch (separator) {
    case CsvSeparator::comma:
      return " \t";
    case CsvSeparator::tab:
      return " ,";
    case CsvSeparator::spaces:
      return ",\t";
  }
  return "";
}

const char* article_name(char c) {
  return c == ',' ? "a comma" : c == '\t' ? "a tab" : "a space";
}

void add_field(std::string_view field, CsvSeparator separator, const CsvLine& line,
               std::vector<std::string_view>& fields) {
  if (const auto at = field.find_first_of(foreign(separator)); at != std::string_view::npos) {
    throw_csv_error(line, static_cast<std::int64_t>(fields.size()) + 1,
                    quote_for_message(field) + " holds " + article_name(field[at]) + ", but line " +
                        std::to_string(line.separator_line) + " separates values with " +
                        plural(separator) + " (one separator per file)");
  }
  fields.push_back(field);
}

}  // namespace

CsvSeparator detect_separator(std::string_view row) {
  if (row.find(',') != std::string_view::npos) return CsvSeparator::comma;
  if (row.find('\t') != std::string_view::npos) return CsvSeparator::tab;
  return CsvSeparator::spaces;
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && is_blank(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back()))
    s.remove_suffix(1);
  return s;
}

void split_fields(std::string_view row, CsvSeparator separator, const CsvLine& line,
                  std::vector<std::string_view>& fields) {
  fields.clear();
  if (separator == CsvSeparator::spaces) {
    std::size_t start = 0;
    while (start < row.size()) {
      const std::size_t stop = std::min(row.find(' ', start), row.size());
      add_field(row.substr(start, stop - start), separator, line, fields);
      start = row.find_first_not_of(' ', stop);
      if (start == std::string_view::npos) break;
    }
    return;
  }
  const char mark = separator == CsvSeparator::comma ? ',' : '\t';
  std::size_t start = 0;
  while (true) {
    const std::size_t stop = std::min(row.find(mark, start), row.size());
    add_field(trim_blanks(row.substr(start, stop - start)), separator, line, fields);
    if (stop == row.size()) return;
    start = stop + 1;
  }
}

void throw_csv_error(const CsvLine& line, std::int64_t column, const std::string& what) {
  throw_read_error(line.where, "line " + std::to_string(line.number) + ", column " +
                                   std::to_string(column) + ": " + what);
}

}  // namespace gausskl::io
