// The three commands, after argument parsing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gausskl/types.hpp"

namespace gausskl::cli {

struct Args {
  std::vector<std::string> p, q;  // q empty: absent
  std::string output;
  std::string dtype;  // "", "float32" or "float64"
  int threads = 0;
  std::int64_t memory_budget = 0;  // bytes; 0: the library's default
  double jitter = 0;
  double tolerance = 0;  // pairwise and knn; 0: the library's default
  bool quiet = false;
  double progress_every = 0;  // --progress [SECONDS]: 0 not given, else the seconds between lines
  std::int64_t k = 0;
  bool exclude_self = false;
  bool log_diagonal = false;         // packed_scale_tril diagonals are log L_rr
  std::string keys, p_keys, q_keys;  // --keys (both sides), --p-keys, --q-keys: Keys::parse text
  std::string divergence = "kl";     // --divergence KIND
  double alpha = 0;                  // --alpha A (renyi's order)
  bool alpha_given = false;
  std::string method = "variational";  // mixture-kl --method
};

// The kind --divergence names (checked by check_divergence_args).
Divergence divergence_of(const Args& args);
// --divergence and --alpha together: renyi needs --alpha, the others take none; throws
// std::invalid_argument "[kl] ...".
void check_divergence_args(const Args& args, const std::string& command);

void run_kl(const Args& args);
void run_pairwise(const Args& args);
void run_knn(const Args& args);
// mixture-kl: --p and --q are batches of Gaussian mixtures (cli/mixture_load.hpp).
void run_mixture_kl(const Args& args);

}  // namespace gausskl::cli
