#include "cli/usage_errors.hpp"

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
    }
    return extra;
  }
  if (flags_only || left.empty()) return std::nullopt;
  extra.message = name + " takes no argument '" + left.front() + "'" +
                  (command ? "" : ": give a command, kl, pairwise, knn or fit");
  return extra;
}

}  // namespace gausskl::cli
