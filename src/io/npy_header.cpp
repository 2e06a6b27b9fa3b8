#include "io/npy_header.hpp"

#include <bit>
#include <charconv>
#include <stdexcept>

#include "io/io_error.hpp"
#include "io/little_endian.hpp"
#include "io/py_dict.hpp"

namespace gausskl::io {
namespace {

struct DescrInfo {
  std::string_view descr;
  DType dtype;
  bool big_endian;
};

// '=' (native) is read as little-endian: NumPy itself never writes it to a file.
constexpr DescrInfo kDescrs[] = {
    {"<f4", DType::float32, false}, {"<f8", DType::float64, false}, {"=f4", DType::float32, false},
    {"=f8", DType::float64, false}, {">f4", DType::float32, true},  {">f8", DType::float64, true},
};

[[noreturn]] void fail_header(std::string_view where, const std::string& what) {
  throw_read_error(where, "malformed .npy header: " + what);
}

void parse_descr(std::string_view value, std::string_view where, NpyHeader& header) {
  std::string_view descr;
  if (py_string_content(value, descr)) {
    for (const auto& info : kDescrs) {
      if (descr == info.descr) {
        header.dtype = info.dtype;
        header.big_endian = info.big_endian;
        return;
      }
    }
  }
  // `value` is Python text, quotes included: "'<i8'" or "[('a', '<f4')]".
  throw_read_error(where, "dtype " + shorten_for_message(value) +
                              " is not supported: only float32 and float64 arrays can be read "
                              "('<f4', '<f8', '>f4', '>f8')");
}

void parse_fortran_order(std::string_view value, std::string_view where, NpyHeader& header) {
  if (value == "True") {
    header.fortran_order = true;
  } else if (value == "False") {
    header.fortran_order = false;
  } else {
    fail_header(where, "fortran_order must be True or False, not " + quote_for_message(value));
  }
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A tuple of non-negative integers: "()", "(5,)", "(3, 4)", "(3, 4,)". Python 2 wrote "3L".
void parse_shape(std::string_view value, std::string_view where, NpyHeader& header) {
  const auto fail = [&] {
    fail_header(where,
                "shape must be a tuple of non-negative integers, not " + quote_for_message(value));
  };
  if (value.size() < 2 || value.front() != '(' || value.back() != ')') fail();
  const std::string_view inner = value.substr(1, value.size() - 2);
  bool saw_comma = false;
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < inner.size() && (inner[i] == ' ' || inner[i] == '\t'))
      ++i;
  };
  while (true) {
    skip_space();
    if (i == inner.size()) break;
    const std::size_t start = i;
    while (i < inner.size() && is_digit(inner[i]))
      ++i;
    if (i == start) fail();
    std::int64_t dim = 0;
    const auto [end, error] = std::from_chars(inner.data() + start, inner.data() + i, dim);
    if (error == std::errc::result_out_of_range) {
      fail_header(where, "shape dimension " + std::string(inner.substr(start, i - start)) +
                             " does not fit in int64");
    }
    header.shape.push_back(dim);
    if (i < inner.size() && inner[i] == 'L') ++i;
    skip_space();
    if (i == inner.size()) break;
    if (inner[i] != ',') fail();
    saw_comma = true;
    ++i;
  }
  // "(5)" is the integer 5 in Python, not a tuple.
  if (header.shape.size() == 1 && !saw_comma) fail();
}

}  // namespace

NpyHeader parse_npy_header(std::string_view text, std::string_view where) {
  struct Field {
    std::string_view key;
    void (*parse)(std::string_view value, std::string_view where, NpyHeader& header);
    bool seen = false;
  };
  Field fields[] = {
      {"descr", parse_descr}, {"fortran_order", parse_fortran_order}, {"shape", parse_shape}};
  NpyHeader header;
  for (const auto& [key, value] : split_py_dict(text, where)) {
    Field* field = nullptr;
    for (auto& candidate : fields) {
      if (candidate.key == key) field = &candidate;
    }
    if (field == nullptr) fail_header(where, "unexpected key " + quote_for_message(key));
    if (field->seen) fail_header(where, "key '" + std::string(key) + "' appears twice");
    field->seen = true;
    field->parse(value, where, header);
  }
  for (const auto& field : fields) {
    if (!field.seen) fail_header(where, "missing key '" + std::string(field.key) + "'");
  }
  return header;
}

bool shape_sizes(std::span<const std::int64_t> shape, std::int64_t item_size, std::int64_t& count,
                 std::int64_t& bytes) {
  count = 1;
  for (const std::int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) return false;
  }
  return !__builtin_mul_overflow(count, item_size, &bytes);
}

std::string shape_text(std::span<const std::int64_t> shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ',';
  return text + ")";
}

NpyPreamble make_npy_preamble(DType dtype, std::span<const std::int64_t> shape) {
  std::int64_t count = 0, bytes = 0;
  if (!shape_sizes(shape, dtype_size(dtype), count, bytes)) {
    throw std::invalid_argument("[write] shape " + shape_text(shape) +
                                " is negative or too large for a .npy file");
  }
  // The data is written in the host's byte order, and the descr says which that is.
  const char order = std::endian::native == std::endian::little ? '<' : '>';
  const char* type = dtype == DType::float32 ? "f4" : dtype == DType::float64 ? "f8" : "i8";
  std::string dict = std::string("{'descr': '") + order + type +
                     "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";

  // magic (6) + version (2) + header length (2) + dict + padding + '\n' = a multiple of 64.
  constexpr std::size_t kPrefix = kNpyMagicSize + 2 + 2;
  constexpr std::size_t kAlign = 64;
  const std::size_t total = (kPrefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  const std::size_t header_len = total - kPrefix;
  if (header_len > 0xFFFF) {
    throw std::invalid_argument("[write] shape " + shape_text(shape) +
                                " has too many dimensions for a .npy header");
  }
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  NpyPreamble preamble{std::string(kNpyMagic, kNpyMagicSize), static_cast<std::uint64_t>(bytes)};
  preamble.bytes += '\x01';  // version 1.0
  preamble.bytes += '\x00';
  append_le(preamble.bytes, header_len, 2);
  preamble.bytes += dict;
  return preamble;
}

}  // namespace gausskl::io
