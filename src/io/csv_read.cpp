#include <algorithm>
#include <charconv>
#include <utility>

#include "io/csv.hpp"
#include "io/csv_fields.hpp"
#include "io/input_file.hpp"
#include "io/io_error.hpp"

namespace gausskl::io {
namespace {

std::string count_text(std::int64_t count) {
  return std::to_string(count) + (count == 1 ? " value" : " values");
}

bool is_separator(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// An upper bound of the values in `text`: every value is a run of non-separator characters.
std::int64_t most_values(std::string_view text) {
  std::int64_t runs = 0;
  bool in_run = false;
  for (const char c : text) {
    const bool separator = is_separator(c);
    runs += !separator && !in_run;
    in_run = !separator;
  }
  return runs;
}

// std::from_chars also reads "nan" and "inf"; the library rejects non-finite values later,
// with a message that names the array. A leading '+' (which Python writes) is allowed.
bool read_number(std::string_view token, double& value, std::errc& error) {
  if (token.size() > 1 && token[0] == '+' && token[1] != '-' && token[1] != '+') {
    token.remove_prefix(1);
  }
  const char* end = token.data() + token.size();
  const auto result = std::from_chars(token.data(), end, value);
  error = result.ec;
  return result.ptr == end;
}

// A column name: starts with a letter or '_' and is not a number ("nan", "inf").
bool is_name(std::string_view token) {
  if (token.empty()) return false;
  const char c = token.front();
  if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  double value = 0;
  std::errc error{};
  return !read_number(token, value, error);
}

bool all_names(const std::vector<std::string_view>& fields) {
  return !fields.empty() && std::all_of(fields.begin(), fields.end(), is_name);
}

// pandas' to_csv header: an empty first field (the index has no name), then the columns'
// names, or 0, 1, 2, ... for a frame made from an array without names. No row of values starts
// with an empty field, so this cannot be mistaken for one.
bool row_labels_header(const std::vector<std::string_view>& fields) {
  if (fields.size() < 2 || !fields.front().empty()) return false;
  const std::vector<std::string_view> rest(fields.begin() + 1, fields.end());
  if (all_names(rest)) return true;
  for (std::size_t k = 0; k < rest.size(); ++k) {
    if (rest[k] != std::to_string(k)) return false;
  }
  return true;
}

double parse_value(std::string_view token, const CsvLine& line, std::int64_t column) {
  if (token.empty()) throw_csv_error(line, column, "empty value");
  double value = 0;
  std::errc error{};
  const bool whole = read_number(token, value, error);
  if (whole && error == std::errc::result_out_of_range) {
    throw_csv_error(line, column, quote_for_message(token) + " is out of the float64 range");
  }
  if (!whole || error != std::errc()) {
    throw_csv_error(line, column, quote_for_message(token) + " is not a number");
  }
  return value;
}

// The names of a comment line ("# mean_0 mean_1 std_0 ..."), if every field is one.
CsvNames comment_names(std::string_view comment, std::int64_t line) {
  CsvNames found{{}, line};
  const std::size_t text = comment.find_first_not_of('#');
  if (text == std::string_view::npos) return {};
  comment = comment.substr(text);
  std::size_t start = comment.find_first_not_of(", \t");
  while (start != std::string_view::npos) {
    const std::size_t stop = std::min(comment.find_first_of(", \t", start), comment.size());
    const std::string_view token = comment.substr(start, stop - start);
    if (!is_name(token)) return {};
    found.names.emplace_back(token);
    start = comment.find_first_not_of(", \t", stop);
  }
  if (found.names.empty()) return {};
  return found;
}

}  // namespace

CsvRowParser::CsvRowParser(std::string where) : where_(std::move(where)) {}

std::int64_t CsvRowParser::feed(std::string_view text, std::vector<double>& values) {
  std::vector<std::string_view> fields;
  const std::int64_t rows_before = rows_;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos) newline = text.size();
    std::string_view row = text.substr(pos, newline - pos);
    pos = newline + 1;
    ++line_number_;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    const bool leading_tab = row.find_first_not_of(' ') != std::string_view::npos &&
                             row[row.find_first_not_of(' ')] == '\t';
    row = trim_blanks(row);
    if (row.empty()) continue;
    if (row.front() == '#') {
      last_comment_ = row;
      comment_line_ = line_number_;
      continue;
    }
    if (columns_ < 0) {
      separator_ = detect_separator(row);
      first_line_ = line_number_;
    }
    const CsvLine line{where_, line_number_, first_line_};
    split_fields(row, separator_, line, fields);
    if (columns_ < 0 && leading_tab && separator_ != CsvSeparator::comma) {
      // pandas' to_csv(sep="\t") starts its header with the index's empty name: the tab trimmed
      // above separated it.
      std::vector<std::string_view> labelled;
      split_fields(row, CsvSeparator::tab, line, labelled);
      labelled.insert(labelled.begin(), std::string_view());
      if (row_labels_header(labelled)) {
        fields = std::move(labelled);
        separator_ = CsvSeparator::tab;
      }
    }
    const auto count = static_cast<std::int64_t>(fields.size());
    if (columns_ < 0) {
      columns_ = count;
      table_.row_labels = row_labels_header(fields);
      if (table_.row_labels || all_names(fields)) {
        table_.header.line = line_number_;
        table_.header.first_column = table_.row_labels ? 2 : 1;
        for (std::size_t k = table_.row_labels ? 1 : 0; k < fields.size(); ++k)
          table_.header.names.emplace_back(fields[k]);
        continue;
      }
      if (comment_line_ == line_number_ - 1) {
        table_.comment = comment_names(last_comment_, comment_line_);
        // "# written by hand" is a remark, not names: names must be one per column.
        if (static_cast<std::int64_t>(table_.comment.names.size()) != count) table_.comment = {};
      }
    } else if (count != columns_) {
      const std::string first = std::to_string(first_line_), expected = std::to_string(columns_);
      throw_read_error(
          where_, "line " + std::to_string(line_number_) + " has " + count_text(count) +
                      (table_.header.line
                           ? ", the header on line " + first + " names " + expected + " columns"
                           : ", line " + first + " has " + expected));
    }
    // pandas' row labels (numbers or not) are not read.
    for (std::int64_t k = table_.row_labels ? 1 : 0; k < count; ++k)
      values.push_back(parse_value(fields[static_cast<std::size_t>(k)], line, k + 1));
    ++rows_;
  }
  return rows_ - rows_before;
}

std::int64_t CsvRowParser::columns() const {
  return columns_ < 0 ? 0 : columns_ - (table_.row_labels ? 1 : 0);
}

CsvTable CsvRowParser::finish(std::vector<double>&& values) {
  if (rows_ == 0) {
    throw_read_error(where_, table_.header.line ? "a header row and no values" : "no values");
  }
  table_.values.shape = {rows_, columns()};
  table_.values.data = std::move(values);
  return std::move(table_);
}

CsvTable parse_csv_table(std::string_view text, const std::string& where,
                         MemoryAllowance* allowance) {
  std::vector<double> values;
  if (allowance) {
    // Reserving the bound also keeps push_back from ever holding two copies while it grows.
    const std::int64_t most = most_values(text);
    allowance->take(most * static_cast<std::int64_t>(sizeof(double)), "read", where);
    values.reserve(static_cast<std::size_t>(most));
  }
  CsvRowParser parser(where);
  parser.feed(text, values);
  return parser.finish(std::move(values));
}

CsvTable read_csv_table(const std::string& path, MemoryAllowance* allowance) {
  const InputFile file(path);
  const auto size = static_cast<std::int64_t>(file.size());
  if (allowance) allowance->take(size, "read", path);
  CsvTable table;
  {
    std::string text(static_cast<std::size_t>(size), '\0');
    file.read_at(0, std::as_writable_bytes(std::span(text)));
    table = parse_csv_table(text, path, allowance);
  }
  if (allowance) allowance->give_back(size);
  return table;
}

}  // namespace gausskl::io
