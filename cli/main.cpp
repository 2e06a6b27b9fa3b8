// gausskl: the command-line tool. Parses arguments, then hands over to cli/commands.cpp.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/fit.hpp"
#include "cli/keys.hpp"
#include "cli/usage_errors.hpp"
#include "gausskl/divergence_kinds.hpp"
#include "gausskl/limits.hpp"
#include "gausskl/ops.hpp"
#include "gausskl/types.hpp"
#include "gausskl/version.hpp"
#include "io/atomic_file.hpp"
#include "util/show.hpp"

namespace {

using gausskl::cli::Args;

constexpr const char* kSpecHelp =
    "distributions: FILE.npz holding `mean` [N, D] (or [D]) and one scale description "
    "(std | var | logvar | precision [N, D]; scale_tril | covariance | precision_matrix "
    "[N, D, D]; packed_scale_tril [N, D (D + 1) / 2], L's lower triangle row by row as "
    "torch.tril_indices orders it; cov_factor [N, D, R] with cov_diag [N, D]); its other "
    "arrays are not read (a note names them). Or FILE.csv, one distribution per row, the "
    "columns named by a header row (or by np.savetxt's '# ' header line): NAME_i for element i "
    "(mean_0, mean_1, ..., std_0, ...), NAME_i_j for matrices; other columns, and pandas' "
    "unnamed first column of row labels, are not read (a note names them). Or NAME=FILE "
    "items, each FILE a .npy or a .csv of one array (a header naming no array is skipped). "
    "CSV values: comma-, tab- or space-separated, one kind per file; '#' lines skipped; .tsv "
    "and .txt are CSV too";

constexpr const char* kKeysHelp =
    "read ARRAY from what the files store as NAME (an .npz array, CSV columns NAME_i), e.g. "
    "mean=mu,std=sigma";

constexpr const char* kOutputHelp =
    "output: .npy or .csv (the extension in any case), or - for CSV on stdout; /dev/null keeps "
    "nothing (for timing a run)";

constexpr const char* kExitCodes =
    "\nExit status: 0 success; 2 bad input or usage (one line on stderr naming the array, the "
    "index and the rule); 1 resource or internal error. On any error no output file is created "
    "and an existing one is left untouched.\n";

// A validator of the option setting Options' `field` by the library's own rule
// (gausskl::check_options), so that a bad value is reported before any input is read; the
// message is the library's rule with the value as typed.
template <class T>
CLI::Validator library_rule(T gausskl::Options::*field, const char* kind, std::string name) {
  return CLI::Validator(
      [field, kind](std::string& text) {
        gausskl::Options options;
        if (!CLI::detail::lexical_cast(text, options.*field))
          return std::string("must be ") + kind + ", found " + text;
        try {
          gausskl::check_options("gausskl", options);
        } catch (const gausskl::OptionError& e) {
          return e.rule() + ", found " + text;
        }
        return std::string();
      },
      std::move(name));
}

void add_common(CLI::App* cmd, Args& args, const char* out_help) {
  cmd->add_option("--p", args.p, kSpecHelp)->required()->expected(1, -1);
  cmd->add_option("--q", args.q, "distributions q, as --p")->expected(1, -1);
  const CLI::Validator keys_rule(
      [](std::string& text) {
        try {
          gausskl::cli::Keys::parse(text);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      },
      "ARRAY=NAME,...");
  cmd->add_option("--keys", args.keys, std::string(kKeysHelp) + "; for --p and --q")
      ->check(keys_rule);
  cmd->add_option("--p-keys", args.p_keys, "as --keys, for --p only (instead of --keys)")
      ->check(keys_rule);
  cmd->add_option("--q-keys", args.q_keys, "as --keys, for --q only (instead of --keys)")
      ->check(keys_rule);
  cmd->add_option("-o,--output", args.output, out_help)->required();
  cmd->add_option("--dtype", args.dtype,
                  "result precision (default: float64 if any input is float64 or CSV, "
                  "else float32)")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("--threads", args.threads, "worker threads (default 0: all cores)")
      ->check(library_rule(&gausskl::Options::threads, "an integer", "N >= 0"));
  cmd->add_option("--memory-budget", args.memory_budget,
                  std::string("the most memory for data, e.g. 512M or 2G: inputs as read, "
                              "converted and prepared copies, work buffers, knn's result, and "
                              "blocks of results, which get the rest; too small is an error "
                              "before the work starts (default: no limit, blocks of ") +
                      std::to_string(gausskl::limits::default_block_bytes >> 20) + "M)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--jitter", args.jitter,
                  "add EPS to the diagonal of each covariance or precision matrix that is not "
                  "positive definite (only those; a note on stderr says how many); default: "
                  "such a matrix is an error")
      ->check(library_rule(&gausskl::Options::jitter, "a number", "EPS >= 0"));
  cmd->add_flag("--log-diagonal", args.log_diagonal,
                "the diagonal entries of packed_scale_tril hold log L_rr (L_rr = exp(x), as "
                "for an unconstrained parameter), in every input that has packed_scale_tril");
  cmd->add_flag("--quiet", args.quiet,
                "no progress line on stderr (none is shown when stderr "
                "is not a terminal either, unless --progress)");
}

// --progress [SECONDS] (pairwise, knn: the commands that take long): progress on stderr when it
// is not a terminal too, as a line every SECONDS.
CLI::Option* add_progress(CLI::App* cmd, std::vector<double>& every) {
  CLI::Option* progress =
      cmd->add_option("--progress", every,
                      "progress on stderr whatever it is (a file, a pipe, a batch job's log): "
                      "a line every SECONDS (default 10) with the rows done, the rate and the "
                      "time left, and one at the end; on a terminal the line redrawn in place, "
                      "as without it")
          ->expected(0, 1)
          ->type_name("[SECONDS]")
          ->check(CLI::Validator(
              [](std::string& text) {
                double value = 0;
                if (CLI::detail::lexical_cast(text, value) && value > 0 && value < 1e9) {
                  return std::string();
                }
                return "SECONDS must be a number > 0, found " + text;
              },
              "SECONDS > 0"));
  progress->excludes(cmd->get_option("--quiet"));
  return progress;
}

std::string tolerance_help() {
  using gausskl::detail::show_limit;
  namespace limits = gausskl::limits;
  return std::string(
             "the error allowed in each result, as |KL - exact| / (|exact| + 1), guaranteed: "
             "entries whose error bound exceeds it are recomputed exactly. Default 0: ") +
         show_limit(limits::default_tolerance_float32) + " when every input is float32, " +
         show_limit(limits::default_tolerance_float64) + " when any is float64 or CSV; at most " +
         show_limit(limits::max_tolerance) + ". ";
}

// --tolerance (pairwise, knn): Options::tolerance (kl has no such option: row-wise results are
// always exact).
void add_tolerance(CLI::App* cmd, Args& args, const char* what_it_changes) {
  cmd->add_option("--tolerance", args.tolerance, tolerance_help() + what_it_changes)
      ->check(library_rule(&gausskl::Options::tolerance, "a number",
                           std::string("EPS in [0, ") +
                               gausskl::detail::show_limit(gausskl::limits::max_tolerance) + "]"));
}

int usage_error(const std::string& message, const std::string& help = "gausskl --help") {
  std::fprintf(stderr, "gausskl: error: %s (see %s)\n", message.c_str(), help.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gausskl: KL divergences between Gaussian distributions (diagonal, full covariance, "
      "low rank + diagonal), in nats."};
  app.set_version_flag("-V,--version", std::string("gausskl ") + gausskl::version());
  app.require_subcommand(1);
  app.footer(kExitCodes);

  Args args;
  CLI::App* kl =
      app.add_subcommand("kl",
                         "row-wise: out[i] = KL(p_i || q_i); N = 1 on either side broadcasts; "
                         "without --q, q = N(0, I)");
  add_common(kl, args, kOutputHelp);
  // --divergence KIND and --alpha A, on each command; returns the --alpha option.
  const auto add_divergence = [&args](CLI::App* command, const std::string& what) {
    command
        ->add_option("--divergence", args.divergence,
                     "what to compute instead of KL: jeffreys (KL both ways, summed), "
                     "bhattacharyya, hellinger (squared), wasserstein2 (squared; also spelled "
                     "frechet: the Frechet distance of FID), renyi (with --alpha); default kl "
                     "(docs/divergences.md)" +
                         what)
        ->transform(CLI::Validator(
            [](std::string& text) {
              if (text == "frechet") text = "wasserstein2";  // the name FID's users search for
              for (const char* name : gausskl::divergence_names) {
                if (text == name) return std::string();
              }
              return "KIND must be one of " + gausskl::divergence_list() + ", found " + text;
            },
            "KIND"));
    return command->add_option("--alpha", args.alpha,
                               "--divergence renyi only, and then required: its order A, finite, "
                               "in (0, 1) or (1, inf)");
  };
  CLI::Option* const kl_alpha = add_divergence(kl, "");
  kl->footer(
      "\nExamples:\n"
      "  gausskl kl --p P.npz --q Q.npz -o kl.npy\n"
      "  gausskl kl --p mean=mu.npy logvar=lv.npy -o -      # KL to N(0, I), the VAE term\n"
      "  gausskl kl --p P.npz --q Q.npz --log-diagonal -o kl.npy   # packed_scale_tril, log "
      "L_rr on the diagonal\n"
      "  gausskl kl --p P.csv --keys mean=mu,std=sigma -o -   # columns mu_0, ..., sigma_0, ...\n"
      "  gausskl kl --p P.npz --q Q.npz --divergence renyi --alpha 0.5 -o renyi.npy\n"
      "kl has no --tolerance: row-wise results are always exact.\n");

  CLI::App* pairwise = app.add_subcommand(
      "pairwise",
      "all pairs: out[i, j] = KL(p_i || q_j) (or --divergence KIND), shape [N, M]; "
      "without --q, q = p (zero diagonal)");
  add_common(pairwise, args, kOutputHelp);
  std::vector<double> progress_every;  // --progress's SECONDS, if given
  CLI::Option* const pairwise_progress = add_progress(pairwise, progress_every);
  add_tolerance(pairwise, args,
                "Larger values (from about 1e-5) let float32 diagonal inputs use a faster "
                "float kernel");
  CLI::Option* const pairwise_alpha = add_divergence(
      pairwise,
      "; --tolerance applies to kl and, of two diagonal sides, to every kind but renyi (tiled); "
      "the rest is computed exactly, per pair");
  pairwise->footer(
      "\nExamples:\n"
      "  gausskl pairwise --p P.npz -o kl.npy\n"
      "  gausskl pairwise --p P.npz --q Q.npz --dtype float64 -o kl.csv\n"
      "  gausskl pairwise --p P.npz --tolerance 1e-5 -o kl.npy   # float32: faster, error <= "
      "1e-5 (|KL| + 1)\n"
      "  gausskl pairwise --p P.npz --divergence wasserstein2 -o w2.npy\n");

  CLI::App* knn = app.add_subcommand("knn",
                                     "nearest neighbours: the K smallest KL(p_i || q_j) (or "
                                     "--divergence KIND) per i, ascending (ties: lower "
                                     "j); without --q, q = p");
  add_common(
      knn, args,
      "output: .npz (arrays `indices` int64 [N, K] and `kl` [N, K], or KIND "
      "with --divergence KIND) or .csv (lines p,rank,q,kl or KIND), in any case, or - for CSV "
      "on stdout; /dev/null keeps nothing");
  knn->add_option("-k", args.k, "neighbours per row, 1 <= K <= M")->required();
  CLI::Option* const knn_progress = add_progress(knn, progress_every);
  add_tolerance(knn, args,
                "knn: the error of the screening pass; the candidates are then re-scored "
                "exactly, so the output does not depend on it, only the speed (from about "
                "1e-5, float32 diagonal inputs may use a faster float kernel)");
  CLI::Option* const knn_alpha =
      add_divergence(knn,
                     "; the other kinds with pairwise's values (to the bit), and the .npz "
                     "array of values and the CSV column are then named after the kind (e.g. "
                     "`jeffreys`)");
  knn->add_flag("--exclude-self", args.exclude_self,
                "without --q: leave out each distribution itself (then K <= N - 1)");
  knn->footer(
      "\nExamples:\n"
      "  gausskl knn --p P.npz -k 10 --exclude-self -o nn.npz\n"
      "  gausskl knn --p queries.npz --q database.npz -k 5 -o -\n"
      "  gausskl knn --p P.npz -k 5 --divergence renyi --alpha 0.5 -o nn.npz   # array `renyi`\n");

  CLI::App* mixture_kl = app.add_subcommand(
      "mixture-kl",
      "KL(f_m || g_m) between Gaussian mixtures, row-wise over two batches of M mixtures (M = 1 "
      "on either side broadcasts), in closed form from the all-pairs matrices between their "
      "components (docs/mixtures.md)");
  add_common(mixture_kl, args,
             "output: .npy or .csv, [M] (with --method bounds [M, 2]: lower, upper), or - for "
             "CSV on stdout; /dev/null keeps nothing");
  mixture_kl->get_option("--p")->description(
      "mixtures f: FILE.npz with the component arrays (as for kl: mean and one scale "
      "description) with the components on axis 1 (mean [M, C, D], or [C, D] for one "
      "mixture) and weights [M, C] (finite, >= 0, summing to 1 over C) or logits [M, C] "
      "(softmax over C) beside them; or NAME=FILE .npy items, weights=FILE or logits=FILE "
      "among them");
  mixture_kl->get_option("--q")->description("mixtures g, as --p")->required();
  mixture_kl
      ->add_option("--method", args.method,
                   "bounds: the guaranteed lower and upper bounds (Durrieu, Thiran & Kelly 2012; "
                   "for f a single Gaussian the tighter -log sum_b pi_b exp(-KL(f || g_b))); "
                   "upper_bound or lower_bound: one of them; variational (default; Hershey & "
                   "Olsen 2007, exact for single Gaussians, 0 for f = g); product; matched "
                   "(Goldberger et al. 2003)")
      ->check(CLI::IsMember(
          {"bounds", "variational", "upper_bound", "lower_bound", "product", "matched"}));
  CLI::Option* const mixture_progress = add_progress(mixture_kl, progress_every);
  mixture_kl->footer(
      "\nExamples:\n"
      "  gausskl mixture-kl --p F.npz --q G.npz -o kl.npy\n"
      "  gausskl mixture-kl --p F.npz --q prior.npz --method bounds -o -   # lower,upper per "
      "row\n"
      "  gausskl mixture-kl --p mean=mu.npy std=s.npy weights=w.npy --q G.npz -o kl.npy\n");

  gausskl::cli::FitArgs fit_args;
  CLI::App* const fit = gausskl::cli::add_fit_command(app, fit_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 lists leftovers in reverse ("1e-5 --tolerance") and reports a missing --p before a
    // misspelt one: name the first argument the command does not take, if any.
    const std::string command = gausskl::cli::command_given(app);
    const std::string help = command.empty() ? "gausskl --help" : "gausskl " + command + " --help";
    const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
    if (const auto extra = gausskl::cli::first_extra(app, !extras)) {
      return usage_error(extra->message, help);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e) && command.empty()) {
      return usage_error("give a command: kl, pairwise, knn, mixture-kl or fit",
                         help);  // not "A subcommand..."
    }
    return usage_error(e.what(), help);
  }
  gausskl::io::remove_temporaries_on_signal();
  for (const CLI::Option* given : {pairwise_progress, knn_progress, mixture_progress}) {
    // --progress alone gives one empty result (read as 0): the default, 10 s.
    if (given->count() > 0) {
      args.progress_every = given->results().front().empty() ? 10 : progress_every.front();
    }
  }

  try {
    if (args.exclude_self && !args.q.empty()) {
      throw std::invalid_argument("[knn] --exclude-self needs q = p (leave out --q)");
    }
    args.alpha_given = kl_alpha->count() + pairwise_alpha->count() + knn_alpha->count() > 0;
    if (kl->parsed()) gausskl::cli::check_divergence_args(args, "kl");
    if (pairwise->parsed()) gausskl::cli::check_divergence_args(args, "pairwise");
    if (knn->parsed()) gausskl::cli::check_divergence_args(args, "knn");
    if (kl->parsed()) gausskl::cli::run_kl(args);
    if (pairwise->parsed()) gausskl::cli::run_pairwise(args);
    if (knn->parsed()) gausskl::cli::run_knn(args);
    if (mixture_kl->parsed()) gausskl::cli::run_mixture_kl(args);
    if (fit->parsed()) gausskl::cli::run_fit(fit_args);
  } catch (const std::invalid_argument& e) {
    // The library's errors come worded for the command line (cli/library_call.hpp).
    std::fprintf(stderr, "gausskl: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gausskl: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gausskl: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
