// A usage error for arguments a command does not take, in place of CLI11's "The following
// arguments were not expected: 1e-5 --tolerance" (reversed, and silent about why).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace gausskl::cli {

struct Extra {
  std::string command;  // the subcommand given ("kl"), or empty
  std::string message;  // "kl has no --tolerance: row-wise results are always exact"
};

// The subcommand given ("kl"), or empty.
std::string command_given(const CLI::App& app);

// After a CLI::ParseError from app.parse(): the first argument left over, worded as
// "COMMAND has no --FLAG" (with which command takes it, or why none does, or "; did you mean
// -k?" for a near miss of one of its own flags: --k, --toleranse, --exclude_self), or, unless
// `flags_only`, "COMMAND takes no argument 'x'" for a stray value; nullopt if none is left.
// A flag left over explains other errors too ("--p is required" when --p was misspelt).
std::optional<Extra> first_extra(const CLI::App& app, bool flags_only);

}  // namespace gausskl::cli
