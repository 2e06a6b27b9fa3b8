#include "cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>
#include <variant>
#include <vector>

#include "cli/library_call.hpp"
#include "cli/load.hpp"
#include "cli/mixture_load.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "gausskl/mixtures.hpp"
#include "gausskl/ops.hpp"
#include "util/show.hpp"

namespace gausskl::cli {
namespace {

struct Inputs {
  Side p;
  std::optional<Side> q;
};

// --memory-budget covers everything the command holds: the inputs as read, converted copies,
// the results kept in memory, and (passed on as Options::memory_budget) the library's share.
io::MemoryAllowance allowance_of(const Args& args) {
  return io::MemoryAllowance(args.memory_budget > 0 ? args.memory_budget : -1);
}

// Files are read and the output opened before any computation, so that every problem with
// them is reported at once.
// A side's --p-keys / --q-keys, else --keys; the texts were checked while parsing arguments.
Keys keys_of(const std::string& side, const std::string& side_keys, const std::string& keys) {
  const std::string& text = side_keys.empty() ? keys : side_keys;
  Keys parsed = text.empty() ? Keys() : Keys::parse(text);
  if (!side_keys.empty()) parsed.set_flag("--" + side + "-keys");
  return parsed;
}

// What loading skipped (pandas' row labels, arrays that are not parameters), on stderr.
void print_notes(const Side& side) {
  for (const std::string& note : side.notes)
    std::fprintf(stderr, "gausskl: note: %s\n", note.c_str());
  if (!ignored_note(side).empty()) {
    std::fprintf(stderr, "gausskl: note: %s\n", ignored_note(side).c_str());
  }
}

Inputs load(const Args& args, io::MemoryAllowance& allowance) {
  Inputs in{load_side("p", args.p, keys_of("p", args.p_keys, args.keys), allowance), std::nullopt};
  if (!args.q.empty()) {
    in.q = load_side("q", args.q, keys_of("q", args.q_keys, args.keys), allowance);
  }
  print_notes(in.p);
  if (in.q) print_notes(*in.q);
  if (args.log_diagonal && !has_packed(in.p) && !(in.q && has_packed(*in.q))) {
    throw std::invalid_argument(
        std::string("[load] --log-diagonal applies to packed_scale_tril, which ") +
        (in.q ? "neither p nor q has" : "p does not have") +
        " (it reads the packed diagonals as log L_rr)");
  }
  return in;
}

bool compute_in_double(const Inputs& in) {
  return has_float64(in.p) || (in.q && has_float64(*in.q));
}

// Calls body.template operator()<T, U>(p, q) with the sides viewed in T, the input precision
// (float64 if any input array is float64), and U the result precision (--dtype, default T);
// q is nullptr without --q.
template <class Body>
void dispatch(const Args& args, const Inputs& in, io::MemoryAllowance& allowance, Body&& body) {
  auto run = [&]<class T, class U>() {
    const Batch<T> p(in.p, allowance, args.log_diagonal);
    std::optional<Batch<T>> q;
    if (in.q) q.emplace(*in.q, allowance, args.log_diagonal);
    body.template operator()<T, U>(p.gaussians(), q ? &q->gaussians() : nullptr);
  };
  const bool t64 = compute_in_double(in);
  const bool u64 = args.dtype.empty() ? t64 : args.dtype == "float64";
  if (t64 && u64) run.template operator()<double, double>();
  if (t64 && !u64) run.template operator()<double, float>();
  if (!t64 && u64) run.template operator()<float, double>();
  if (!t64 && !u64) run.template operator()<float, float>();
}

// The library's options from the arguments, with what is left of the memory budget; progress,
// if given, gets the per-block reports.
Options options(const Args& args, const io::MemoryAllowance& allowance,
                Progress* progress = nullptr) {
  Options o;
  o.threads = args.threads;
  o.exclude_self = args.exclude_self;
  // Nothing left still has to be an explicit (too small) budget, not 0 = the default.
  if (allowance.limited()) o.memory_budget = std::max<std::int64_t>(allowance.left(), 1);
  o.jitter = args.jitter;
  o.tolerance = args.tolerance;
  o.divergence = divergence_of(args);
  o.alpha = args.alpha_given ? args.alpha : 0;
  o.on_jitter = [jitter = args.jitter](const char* side, std::int64_t count) {
    std::fprintf(stderr,
                 "gausskl: note: %lld %s distribution(s) were not positive definite; factored "
                 "with %g added to the diagonal (--jitter)\n",
                 static_cast<long long>(count), side, jitter);
  };
  if (progress) {
    o.progress = [progress](std::int64_t done, std::int64_t total) { (*progress)(done, total); };
  }
  return o;
}

// What the budget had given out when the library is called; `inputs` is what was taken before
// the command's own results.
BudgetUse budget_use(const Args& args, const io::MemoryAllowance& allowance, std::int64_t inputs) {
  if (!allowance.limited()) return {};
  return {args.memory_budget, inputs, allowance.taken() - inputs, allowance.left()};
}

// Progress on stderr: redrawn in place on a terminal (unless --quiet); with --progress, on any
// other stream too, as a line every --progress seconds (a batch job's log).
Progress::Mode progress_mode(const Args& args) {
  if (args.quiet) return Progress::Mode::off;
  if (isatty(fileno(stderr))) return Progress::Mode::terminal;
  return args.progress_every > 0 ? Progress::Mode::lines : Progress::Mode::off;
}

}  // namespace

Divergence divergence_of(const Args& args) {
  for (std::size_t k = 0; k < divergence_names.size(); ++k) {
    if (args.divergence == divergence_names[k]) return static_cast<Divergence>(k);
  }
  return Divergence::kl;  // not reached: the parser checked the name
}

void check_divergence_args(const Args& args, const std::string& command) {
  const std::string tag = "[" + command + "] ";
  const Divergence kind = divergence_of(args);
  if (kind == Divergence::renyi && !args.alpha_given) {
    throw std::invalid_argument(
        tag +
        "--divergence renyi needs --alpha A, the order of the divergence (finite, in "
        "(0, 1) or (1, inf))");
  }
  if (kind != Divergence::renyi && args.alpha_given) {
    throw std::invalid_argument(tag +
                                "--alpha is the order of the renyi divergence; --divergence " +
                                args.divergence + " takes none");
  }
  if (kind == Divergence::renyi) {
    Options o;
    o.divergence = kind;
    o.alpha = args.alpha;
    try {
      check_options(command.c_str(), o);
    } catch (const OptionError& e) {
      throw std::invalid_argument(tag + "--alpha " + e.rule() + ", found " +
                                  detail::show(args.alpha));
    }
  }
}

void run_kl(const Args& args) {
  io::MemoryAllowance allowance = allowance_of(args);
  const Inputs in = load(args, allowance);
  Output out(args.output, {Format::npy, Format::csv});
  dispatch(args, in, allowance,
           [&]<class T, class U>(const Gaussians<T>& p, const Gaussians<T>* q) {
             const std::int64_t n = q && p.n() == 1 ? q->n() : p.n();
             const std::int64_t inputs = allowance.taken();
             allowance.take(n * static_cast<std::int64_t>(sizeof(U)), "kl", "the result");
             std::vector<U> result(static_cast<std::size_t>(n));
             const BudgetUse budget = budget_use(args, allowance, inputs);
             if (divergence_of(args) != Divergence::kl) {
               // Without --q, q = N(0, I): one standard normal, broadcast.
               const std::int64_t d = p.d();
               const std::vector<T> zeros(static_cast<std::size_t>(d), T(0)),
                   ones(static_cast<std::size_t>(d), T(1));
               const Gaussians<T> standard(DiagGaussians<T>{contiguous<T, 2>(zeros.data(), {1, d}),
                                                            contiguous<T, 2>(ones.data(), {1, d})});
               call_library("kl", budget, [&] {
                 divergence(p, q ? *q : standard, std::span<U>(result), options(args, allowance));
               });
             } else if (q) {
               call_library("kl", budget,
                            [&] { kl(p, *q, std::span<U>(result), options(args, allowance)); });
             } else {
               // The user ran kl: its errors say [kl], not the function it calls (the tag is
               // always the command's name: cli/library_call.hpp).
               call_library("kl", budget, [&] {
                 kl_standard_normal(p, std::span<U>(result), options(args, allowance));
               });
             }
             MatrixWriter<U>(out, n, 0).append(n, result.data());
           });
  out.commit();
}

void run_pairwise(const Args& args) {
  io::MemoryAllowance allowance = allowance_of(args);
  const Inputs in = load(args, allowance);
  Output out(args.output, {Format::npy, Format::csv});
  dispatch(args, in, allowance,
           [&]<class T, class U>(const Gaussians<T>& p, const Gaussians<T>* q) {
             const std::int64_t n = p.n(), m = q ? q->n() : n;
             // Row blocks go to the file as they are done: the matrix is never held whole.
             std::optional<MatrixWriter<U>> writer;
             Progress progress("pairwise", progress_mode(args), args.progress_every);
             const RowSink<U> sink([&](std::int64_t, std::int64_t rows, std::span<const U> block) {
               if (!writer) writer.emplace(out, n, m);
               writer->append(rows, block.data());
             });
             // The tag is the command's name, whatever --divergence is (README, "Messages").
             call_library("pairwise", budget_use(args, allowance, allowance.taken()),
                          [&] { pairwise_rows(p, q, sink, options(args, allowance, &progress)); });
             if (!writer) writer.emplace(out, n, m);  // N = 0: the header alone
           });
  out.commit();
}

void run_knn(const Args& args) {
  io::MemoryAllowance allowance = allowance_of(args);
  const Inputs in = load(args, allowance);
  Output out(args.output, {Format::npz, Format::csv});
  dispatch(args, in, allowance,
           [&]<class T, class U>(const Gaussians<T>& p, const Gaussians<T>* q) {
             const std::int64_t n = p.n(), m = q ? q->n() : n;
             // The library checks k against M; the sizes here are only allocated for a valid k.
             const std::int64_t k = (args.k >= 1 && args.k <= m) ? args.k : 0;
             const std::int64_t inputs = allowance.taken();
             allowance.take(n * k * static_cast<std::int64_t>(sizeof(std::int64_t) + sizeof(U)),
                            "knn", "the result");
             std::vector<std::int64_t> indices(static_cast<std::size_t>(n * k));
             std::vector<U> values(indices.size());
             Progress progress("knn", progress_mode(args), args.progress_every);
             const Divergence kind = divergence_of(args);
             call_library("knn", budget_use(args, allowance, inputs), [&] {
               const Options o = options(args, allowance, &progress);
               if (q) {
                 knn(p, *q, args.k, indices, std::span<U>(values), o);
               } else {
                 knn(p, args.k, indices, std::span<U>(values), o);
               }
             });
             write_knn(out, n, k, indices.data(), values.data(), divergence_name(kind));
           });
  out.commit();
}

namespace {

// A mixture side's weights in T, [M, C].
template <class T>
std::vector<T> weights_in(const io::Array& a) {
  return std::visit([](const auto& v) { return std::vector<T>(v.begin(), v.end()); }, a.data);
}

}  // namespace

void run_mixture_kl(const Args& args) {
  io::MemoryAllowance allowance = allowance_of(args);
  const MixtureSide p =
      load_mixture_side("p", args.p, keys_of("p", args.p_keys, args.keys), allowance);
  const MixtureSide q =
      load_mixture_side("q", args.q, keys_of("q", args.q_keys, args.keys), allowance);
  print_notes(p.components);
  print_notes(q.components);
  Output out(args.output, {Format::npy, Format::csv});
  const bool bounds = args.method == "bounds";
  MixtureMethod method = MixtureMethod::variational;
  for (std::size_t k = 0; k < mixture_method_names.size(); ++k) {
    if (args.method == mixture_method_names[k]) method = static_cast<MixtureMethod>(k);
  }
  const bool t64 = has_float64(p.components) || has_float64(q.components) ||
                   p.weights.dtype() == io::DType::float64 ||
                   q.weights.dtype() == io::DType::float64;
  const bool u64 = args.dtype.empty() ? t64 : args.dtype == "float64";
  const auto run = [&]<class T>() {
    const Batch<T> pc(p.components, allowance, args.log_diagonal);
    const Batch<T> qc(q.components, allowance, args.log_diagonal);
    const std::vector<T> pw = weights_in<T>(p.weights), qw = weights_in<T>(q.weights);
    const Mixtures<T> f{pc.gaussians(),
                        contiguous<T, 2>(pw.data(), {p.weights.shape[0], p.weights.shape[1]}),
                        p.logits};
    const Mixtures<T> g{qc.gaussians(),
                        contiguous<T, 2>(qw.data(), {q.weights.shape[0], q.weights.shape[1]}),
                        q.logits};
    const std::int64_t n = f.count() == 1 ? g.count() : f.count();
    const std::int64_t inputs = allowance.taken();
    allowance.take(n * static_cast<std::int64_t>(bounds ? 2 * sizeof(double) : sizeof(double)),
                   "mixture-kl", "the result");
    std::vector<double> a(static_cast<std::size_t>(n)), b(bounds ? a.size() : 0);
    Progress progress("mixture-kl", progress_mode(args), args.progress_every);
    call_library("mixture-kl", budget_use(args, allowance, inputs), [&] {
      const Options o = options(args, allowance, &progress);
      if (bounds) {
        mixture_kl_bounds(f, g, a, b, o);
      } else {
        mixture_kl(f, g, method, a, o);
      }
    });
    // bounds: [M, 2], lower then upper per row; otherwise [M].
    const auto write = [&]<class U>() {
      std::vector<U> values(bounds ? 2 * a.size() : a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (bounds) {
          values[2 * i] = static_cast<U>(a[i]);
          values[2 * i + 1] = static_cast<U>(b[i]);
        } else {
          values[i] = static_cast<U>(a[i]);
        }
      }
      MatrixWriter<U>(out, n, bounds ? 2 : 0).append(n, values.data());
    };
    if (u64) {
      write.template operator()<double>();
    } else {
      write.template operator()<float>();
    }
  };
  if (t64) {
    run.template operator()<double>();
  } else {
    run.template operator()<float>();
  }
  out.commit();
}

}  // namespace gausskl::cli
