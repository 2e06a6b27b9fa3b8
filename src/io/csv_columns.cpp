#include "io/csv_columns.hpp"

#include <algorithm>
#include <charconv>

#include "io/csv_fields.hpp"
#include "io/io_error.hpp"

namespace gausskl::io {
namespace {

// One column's place: the array, its element indices (none, [i] or [i, j]), how the file
// wrote the array's name.
struct Column {
  std::int64_t column;  // 0-based
  std::string array;
  std::string written;
  std::vector<std::int64_t> indices;
};

// Splits "name_12" into "name" and 12; false if the name does not end in '_' and digits. More
// than 9 digits is no index (it could not be a column of any table anyway).
bool split_index(std::string_view name, std::string_view& base, std::int64_t& index) {
  const std::size_t underscore = name.rfind('_');
  if (underscore == std::string_view::npos || underscore == 0) return false;
  const std::string_view digits = name.substr(underscore + 1);
  if (digits.empty() || digits.size() > 9) return false;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  std::from_chars(digits.data(), digits.data() + digits.size(), index);
  base = name.substr(0, underscore);
  return true;
}

// The array and indices of one column name: the whole name, else without one index, else
// without two.
std::optional<Column> place_of(std::string_view name, std::int64_t column,
                               const CsvResolve& resolve) {
  std::string_view base = name;
  std::vector<std::int64_t> indices;
  for (int stripped = 0;; ++stripped) {
    if (auto array = resolve(base)) {
      std::reverse(indices.begin(), indices.end());
      return Column{column, std::move(*array), std::string(base), std::move(indices)};
    }
    std::int64_t index = 0;
    if (stripped == 2 || !split_index(base, base, index)) return std::nullopt;
    indices.push_back(index);
  }
}

std::string indexed(const std::string& written, const std::vector<std::int64_t>& indices) {
  std::string name = written;
  for (const std::int64_t i : indices) {
    // Appended piece by piece: `"_" + std::to_string(i)` trips GCC 12's -Wrestrict false
    // positive (GCC bug 105329) at -O3.
    name += '_';
    name += std::to_string(i);
  }
  return name;
}

// The array's shape per row and each column's flat position in it, in the columns' order.
// Checks every element is there exactly once.
std::vector<std::int64_t> layout(const std::vector<const Column*>& columns, const CsvLine& line,
                                 std::int64_t shift, std::vector<std::int64_t>& row_shape) {
  const Column& first = *columns.front();
  const auto count = static_cast<std::int64_t>(columns.size());
  for (const Column* c : columns) {
    if (c->indices.size() != first.indices.size() || c->written != first.written) {
      throw_csv_error(line, c->column + shift,
                      quote_for_message(indexed(c->written, c->indices)) + " and column " +
                          std::to_string(first.column + shift) + " (" +
                          quote_for_message(indexed(first.written, first.indices)) +
                          ") name the same array in two ways; use one");
    }
  }
  std::vector<std::int64_t> positions;
  if (first.indices.empty()) {  // ARRAY, ARRAY, ...: the elements in column order
    row_shape = {count};
    for (std::int64_t k = 0; k < count; ++k)
      positions.push_back(k);
    return positions;
  }
  row_shape.assign(first.indices.size(), 0);
  for (const Column* c : columns) {
    for (std::size_t a = 0; a < row_shape.size(); ++a)
      row_shape[a] = std::max(row_shape[a], c->indices[a] + 1);
  }
  // Each extent is at most a 9-digit index + 1, so the product of two fits in int64.
  std::int64_t elements = 1;
  for (const std::int64_t extent : row_shape)
    elements *= extent;
  std::vector<std::pair<std::int64_t, const Column*>> sorted;
  for (const Column* c : columns) {
    const std::int64_t flat =
        c->indices.size() == 1 ? c->indices[0] : c->indices[0] * row_shape[1] + c->indices[1];
    positions.push_back(flat);
    sorted.emplace_back(flat, c);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    const auto [flat, c] = sorted[k];
    if (k > 0 && sorted[k - 1].first == flat) {
      throw_csv_error(line, c->column + shift,
                      quote_for_message(indexed(c->written, c->indices)) +
                          " appears twice (also column " +
                          std::to_string(sorted[k - 1].second->column + shift) + ")");
    }
  }
  if (count != elements) {
    // The first element with no column: the first flat position the sorted list skips.
    std::int64_t missing = 0;
    for (const auto& [flat, c] : sorted) {
      if (flat != missing) break;
      ++missing;
    }
    std::vector<std::int64_t> index = {missing};
    if (row_shape.size() == 2) index = {missing / row_shape[1], missing % row_shape[1]};
    throw_read_error(line.where, "line " + std::to_string(line.number) + ": no column " +
                                     quote_for_message(indexed(first.written, index)) + " (" +
                                     first.array + " has " + std::to_string(count) + " of " +
                                     std::to_string(elements) + " elements)");
  }
  return positions;
}

}  // namespace

std::optional<std::string> array_of_column(std::string_view name, const CsvResolve& resolve) {
  auto place = place_of(name, 0, resolve);
  if (!place) return std::nullopt;
  return std::move(place->array);
}

std::vector<std::pair<std::string, Array>> csv_arrays(
    CsvTable&& table, const CsvNames& names, const std::string& where, const CsvResolve& resolve,
    const std::string& unknown, MemoryAllowance* allowance, std::vector<std::string>* skipped) {
  const std::int64_t rows = table.values.shape[0], width = table.values.shape[1];
  const CsvLine line{where, names.line, names.line};
  const std::int64_t shift = names.first_column;  // Column::column + shift: the file's column
  if (static_cast<std::int64_t>(names.names.size()) != width) {
    throw_read_error(where, "line " + std::to_string(names.line) + " names " +
                                std::to_string(names.names.size()) + " columns, the rows have " +
                                std::to_string(width));
  }
  std::vector<Column> columns;
  std::vector<std::string> order;  // arrays by first column
  for (std::int64_t c = 0; c < width; ++c) {
    const std::string& name = names.names[static_cast<std::size_t>(c)];
    auto place = place_of(name, c, resolve);
    if (!place && skipped) {
      skipped->push_back(name);
      continue;
    }
    if (!place) throw_csv_error(line, c + shift, quote_for_message(name) + " " + unknown);
    if (std::find(order.begin(), order.end(), place->array) == order.end()) {
      order.push_back(place->array);
    }
    columns.push_back(std::move(*place));
  }

  auto& values = std::get<std::vector<double>>(table.values.data);
  std::vector<std::pair<std::string, Array>> arrays;
  for (const std::string& array : order) {
    std::vector<const Column*> mine;
    for (const Column& c : columns)
      if (c.array == array) mine.push_back(&c);
    std::vector<std::int64_t> row_shape;
    const std::vector<std::int64_t> positions = layout(mine, line, shift, row_shape);
    Array out;
    out.shape = {rows};
    out.shape.insert(out.shape.end(), row_shape.begin(), row_shape.end());
    const auto per_row = static_cast<std::int64_t>(positions.size());
    // One array whose columns are all the table's, in element order.
    bool in_place = order.size() == 1 && per_row == width;
    for (std::int64_t k = 0; k < per_row && in_place; ++k)
      in_place = positions[static_cast<std::size_t>(k)] == k;
    if (in_place) {
      out.data = std::move(values);
      arrays.emplace_back(array, std::move(out));
      return arrays;
    }
    if (allowance) allowance->take(rows * per_row * 8, "read", where);
    std::vector<double> data(static_cast<std::size_t>(rows * per_row));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < per_row; ++k) {
        const Column& c = *mine[static_cast<std::size_t>(k)];
        data[static_cast<std::size_t>(r * per_row + positions[static_cast<std::size_t>(k)])] =
            values[static_cast<std::size_t>(r * width + c.column)];
      }
    }
    out.data = std::move(data);
    arrays.emplace_back(array, std::move(out));
  }
  const auto table_bytes = static_cast<std::int64_t>(values.capacity() * sizeof(double));
  std::vector<double>().swap(values);
  if (allowance) allowance->give_back(table_bytes);
  return arrays;
}

}  // namespace gausskl::io
