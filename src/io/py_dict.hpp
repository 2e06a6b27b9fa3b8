// The header of a .npy file is a Python dict literal, e.g.
//   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// This splits one into keys and the raw text of each value without evaluating anything.
// It tolerates any spacing, either quote character and a trailing comma, and runs in one
// pass with no recursion, so hostile input cannot exhaust the stack.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gausskl::io {

struct PyDictItem {
  std::string_view key;    // without quotes, escapes left as written
  std::string_view value;  // raw text, e.g. "'<f8'", "False", "(3, 4)"
};

// Throws std::invalid_argument("[read] where: malformed .npy header: ...").
std::vector<PyDictItem> split_py_dict(std::string_view text, std::string_view where);

// If `text` is exactly one quoted string literal, stores its content (escapes left as written)
// in `content` and returns true.
bool py_string_content(std::string_view text, std::string_view& content);

}  // namespace gausskl::io
