// The arrays a CSV table's named columns hold. A column is named ARRAY (one value per row; an
// ARRAY repeated is its elements in order), ARRAY_i (element i of each row's vector) or
// ARRAY_i_j (element [i, j] of each row's matrix), so a table of mean_0, mean_1, std_0, std_1
// gives mean [rows, 2] and std [rows, 2], and scale_tril_0_0, ... gives scale_tril [rows, D, D].
// The columns of one array may come in any order, but each element exactly once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/csv.hpp"

namespace gausskl::io {

// The array a name written in the file stands for, or nullopt if none.
using CsvResolve = std::function<std::optional<std::string>(std::string_view written)>;

// The array a column name stands for, with or without one or two indices (mean_0, scale_tril_0_1),
// or nullopt if none.
std::optional<std::string> array_of_column(std::string_view name, const CsvResolve& resolve);

// The arrays, in the order of their first columns. A name that resolves to no array, with or
// without its indices, is skipped and added to `skipped` when that is given, else an error
// "[read] where: line L, column C: 'weights_0' " + `unknown`; a missing or repeated element,
// mixed forms of one array and a count of names that is not the count of columns are errors. With
// `allowance`, the arrays' bytes are taken from it when they cannot simply take over the table's
// values, and the table's are given back once it is freed.
std::vector<std::pair<std::string, Array>> csv_arrays(CsvTable&& table, const CsvNames& names,
                                                      const std::string& where,
                                                      const CsvResolve& resolve,
                                                      const std::string& unknown,
                                                      MemoryAllowance* allowance = nullptr,
                                                      std::vector<std::string>* skipped = nullptr);

}  // namespace gausskl::io
