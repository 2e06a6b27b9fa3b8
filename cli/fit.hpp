// gausskl fit: the Gaussian fitted to rows of features (FID's statistics), streamed from a file.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace gausskl::cli {

struct FitArgs {
  std::string x;       // FILE.npy, FILE.npz[:NAME] or FILE.csv
  std::string output;  // STATS.npz
  std::int64_t ddof = 1;
  std::string family = "full";
  int threads = 0;
  bool quiet = false;
};

// The `fit` subcommand and its options, filling `args`.
CLI::App* add_fit_command(CLI::App& app, FitArgs& args);

// Reads the rows a block at a time into a MomentAccumulator, then writes mean [D], covariance
// [D, D] (var [D] for --family diag) and count to the .npz output, whole or not at all. Throws
// std::invalid_argument "[fit] ..." for bad input.
void run_fit(const FitArgs& args);

}  // namespace gausskl::cli
