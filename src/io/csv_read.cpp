#include <algorithm>
#include <charconv>

#include "io/csv.hpp"
#include "io/input_file.hpp"
#include "io/io_error.hpp"

namespace gausskl::io {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && is_blank(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string count_text(std::int64_t count) {
  return std::to_string(count) + (count == 1 ? " value" : " values");
}

// std::from_chars also reads "nan" and "inf"; the library rejects non-finite values later,
// with a message that names the array. A leading '+' (which Python writes) is allowed.
double parse_value(std::string_view token, const std::string& where, std::int64_t line,
                   std::int64_t column) {
  const auto fail = [&](const std::string& what) {
    throw_read_error(
        where, "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  };
  if (token.empty()) fail("empty value");
  std::string_view digits = token;
  if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-' && digits[1] != '+') {
    digits.remove_prefix(1);
  }
  double value = 0;
  const char* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, value);
  if (stop != end) fail(quote_for_message(token) + " is not a number");
  if (error == std::errc::result_out_of_range) {
    fail(quote_for_message(token) + " is out of the float64 range");
  }
  if (error != std::errc()) fail(quote_for_message(token) + " is not a number");
  return value;
}

}  // namespace

Array parse_csv(std::string_view text, const std::string& where, MemoryAllowance* allowance) {
  std::vector<double> values;
  if (allowance) {
    // Every value but a line's last ends at a comma, so this bounds the count; reserving it
    // also keeps push_back from ever holding two copies while it grows.
    const auto most = static_cast<std::int64_t>(std::count(text.begin(), text.end(), ',') +
                                                std::count(text.begin(), text.end(), '\n') + 1);
    allowance->take(most * static_cast<std::int64_t>(sizeof(double)), "read", where);
    values.reserve(static_cast<std::size_t>(most));
  }
  std::int64_t rows = 0, columns = 0, first_row_line = 0, line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos) newline = text.size();
    std::string_view line = text.substr(pos, newline - pos);
    pos = newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;

    std::int64_t count = 0;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = line.find(',', start);
      const std::size_t stop = comma == std::string_view::npos ? line.size() : comma;
      ++count;
      values.push_back(
          parse_value(trim(line.substr(start, stop - start)), where, line_number, count));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (rows == 0) {
      columns = count;
      first_row_line = line_number;
    } else if (count != columns) {
      throw_read_error(where, "line " + std::to_string(line_number) + " has " + count_text(count) +
                                  ", line " + std::to_string(first_row_line) + " has " +
                                  std::to_string(columns));
    }
    ++rows;
  }
  if (rows == 0) throw_read_error(where, "no values");
  Array array;
  array.shape = {rows, columns};
  array.data = std::move(values);
  return array;
}

Array read_csv(const std::string& path, MemoryAllowance* allowance) {
  const InputFile file(path);
  const auto size = static_cast<std::int64_t>(file.size());
  if (allowance) allowance->take(size, "read", path);
  Array array;
  {
    std::string text(static_cast<std::size_t>(size), '\0');
    file.read_at(0, std::as_writable_bytes(std::span(text)));
    array = parse_csv(text, path, allowance);
  }
  if (allowance) allowance->give_back(size);
  return array;
}

}  // namespace gausskl::io
