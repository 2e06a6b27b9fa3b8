#include "io/py_dict.hpp"

#include "io/io_error.hpp"

namespace gausskl::io {
namespace {

constexpr auto npos = std::string_view::npos;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && is_space(s[i]))
    ++i;
  return i;
}

// s[i] is a quote; returns the index just past the matching quote, or npos.
std::size_t string_end(std::string_view s, std::size_t i) {
  const char quote = s[i];
  for (std::size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') {
      ++j;
    } else if (s[j] == quote) {
      return j + 1;
    }
  }
  return npos;
}

// Returns the index of the ',' or '}' that ends the value starting at s[i] (outside brackets
// and strings), or npos if there is none.
std::size_t value_end(std::string_view s, std::size_t i) {
  std::size_t depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      i = string_end(s, i);
      if (i == npos) return npos;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) return c == '}' ? i : npos;
      --depth;
    } else if (c == ',' && depth == 0) {
      return i;
    }
    ++i;
  }
  return npos;
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

}  // namespace

bool py_string_content(std::string_view text, std::string_view& content) {
  if (text.empty() || (text[0] != '\'' && text[0] != '"')) return false;
  if (string_end(text, 0) != text.size()) return false;
  content = text.substr(1, text.size() - 2);
  return true;
}

std::vector<PyDictItem> split_py_dict(std::string_view text, std::string_view where) {
  const auto fail = [&](std::string_view what) {
    throw_read_error(where, "malformed .npy header: " + std::string(what));
  };
  std::vector<PyDictItem> items;
  std::size_t i = skip_space(text, 0);
  if (i == text.size() || text[i] != '{') fail("it is not a dict");
  ++i;
  while (true) {
    i = skip_space(text, i);
    if (i == text.size()) fail("missing '}'");
    if (text[i] == '}') break;
    if (text[i] != '\'' && text[i] != '"') fail("expected a quoted key");
    const std::size_t key_end = string_end(text, i);
    if (key_end == npos) fail("unterminated string");
    const std::string_view key = text.substr(i + 1, key_end - i - 2);
    i = skip_space(text, key_end);
    if (i == text.size() || text[i] != ':') fail("expected ':' after a key");
    i = skip_space(text, i + 1);
    const std::size_t end = value_end(text, i);
    if (end == npos) fail("a value is not terminated by ',' or '}'");
    const std::string_view value = trim_right(text.substr(i, end - i));
    if (value.empty()) fail("missing value for key '" + std::string(key) + "'");
    items.push_back({key, value});
    i = end;
    if (text[i] == ',') ++i;
  }
  // NumPy pads the header with spaces and ends it with '\n'.
  if (skip_space(text, i + 1) != text.size()) fail("unexpected text after '}'");
  return items;
}

}  // namespace gausskl::io
