#include "cli/usage_errors.hpp"

#include <algorithm>
#include <vector>

namespace gausskl::cli {
namespace {

bool is_flag(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  return !(std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');  // -1.5 is a value
}

// The commands, other than `except`, that take `flag`.
std::vector<std::string> takers(const CLI::App& app, const std::string& flag,
                                const CLI::App* except) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub != except && sub->get_option_no_throw(flag) != nullptr)
      names.push_back(sub->get_name());
  }
  return names;
}

// A flag as it is meant: without its dashes, '_' as '-', in lower case (--K, -tolerance,
// --exclude_self).
std::string normalized(const std::string& flag) {
  std::string text = flag.substr(flag.find_first_not_of('-'));
  for (char& c : text) {
    if (c == '_') c = '-';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The command's own flag closest to `flag`: the same but for dashes, '_' or case, else (from two
// letters) one edit away, two for six letters or more; empty if none is that close.
std::string near_miss(const CLI::App& command, const std::string& flag) {
  const std::string given = normalized(flag);
  std::string best;
  // One letter has no near misses but itself (--x is not --q).
  std::size_t best_distance = given.size() >= 6 ? 3 : given.size() >= 2 ? 2 : 1;
  for (const CLI::Option* option : command.get_options()) {
    std::vector<std::string> names;
    for (const std::string& n : option->get_lnames())
      names.push_back("--" + n);
    for (const std::string& n : option->get_snames())
      names.push_back("-" + n);
    for (const std::string& name : names) {
      const std::size_t distance = edit_distance(given, normalized(name));
      if (distance < best_distance) {
        best = name;
        best_distance = distance;
      }
    }
  }
  return best;
}

const CLI::App* parsed_command(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->parsed()) return sub;
  }
  return nullptr;
}

}  // namespace

std::string command_given(const CLI::App& app) {
  const CLI::App* command = parsed_command(app);
  return command ? command->get_name() : "";
}

std::optional<Extra> first_extra(const CLI::App& app, bool flags_only) {
  const CLI::App* command = parsed_command(app);
  const CLI::App& where = command ? *command : app;
  std::vector<std::string> left = where.remaining();
  if (left.empty()) left = app.remaining(true);
  Extra extra{command ? command->get_name() : "", ""};
  const std::string name = command ? command->get_name() : "gausskl";
  for (const std::string& arg : left) {
    if (!is_flag(arg)) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    extra.message = name + " has no " + flag;
    if (name == "kl" && flag == "--tolerance") {
      extra.message += ": row-wise results are always exact";
    } else if (const auto others = takers(app, flag, command); !others.empty()) {
      std::string list;
      for (std::size_t k = 0; k < others.size(); ++k)
        list += (k == 0 ? "" : k + 1 == others.size() ? " and " : ", ") + others[k];
      extra.message += " (" + list + (others.size() == 1 ? " takes it)" : " take it)");
    } else if (const std::string near = near_miss(where, flag); !near.empty()) {
      extra.message += "; did you mean " + near + "?";
    }
    return extra;
  }
  if (flags_only || left.empty()) return std::nullopt;
  extra.message = name + " takes no argument '" + left.front() + "'" +
                  (command ? "" : ": give a command, kl, pairwise, knn or fit");
  return extra;
}

}  // namespace gausskl::cli
