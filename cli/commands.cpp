#include "cli/commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>

#include "cli/load.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "gausskl/ops.hpp"

namespace gausskl::cli {
namespace {

struct Inputs {
  Side p;
  std::optional<Side> q;
};

// Files are read and the output opened before any computation, so that every problem with
// them is reported at once.
Inputs load(const Args& args) {
  Inputs in{load_side("p", args.p), std::nullopt};
  if (!args.q.empty()) in.q = load_side("q", args.q);
  return in;
}

bool compute_in_double(const Inputs& in) {
  return has_float64(in.p) || (in.q && has_float64(*in.q));
}

// Calls body.template operator()<T, U>(p, q) with the sides viewed in T, the input precision
// (float64 if any input array is float64), and U the result precision (--dtype, default T);
// q is nullptr without --q.
template <class Body>
void dispatch(const Args& args, const Inputs& in, Body&& body) {
  auto run = [&]<class T, class U>() {
    const Batch<T> p(in.p);
    std::optional<Batch<T>> q;
    if (in.q) q.emplace(*in.q);
    body.template operator()<T, U>(p.gaussians(), q ? &q->gaussians() : nullptr);
  };
  const bool t64 = compute_in_double(in);
  const bool u64 = args.dtype.empty() ? t64 : args.dtype == "float64";
  if (t64 && u64) run.template operator()<double, double>();
  if (t64 && !u64) run.template operator()<double, float>();
  if (!t64 && u64) run.template operator()<float, double>();
  if (!t64 && !u64) run.template operator()<float, float>();
}

// The library's options from the arguments; progress, if given, gets the per-block reports.
Options options(const Args& args, Progress* progress = nullptr) {
  Options o;
  o.threads = args.threads;
  o.exclude_self = args.exclude_self;
  o.memory_budget = args.memory_budget;
  o.jitter = args.jitter;
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

// Progress on stderr only for a person watching: a terminal, and no --quiet.
bool show_progress(const Args& args) {
  return !args.quiet && isatty(fileno(stderr));
}

}  // namespace

void run_kl(const Args& args) {
  const Inputs in = load(args);
  Output out(args.output, {Format::npy, Format::csv});
  dispatch(args, in, [&]<class T, class U>(const Gaussians<T>& p, const Gaussians<T>* q) {
    const std::int64_t n = q && p.n() == 1 ? q->n() : p.n();
    std::vector<U> result(static_cast<std::size_t>(n));
    if (q) {
      kl(p, *q, std::span<U>(result), options(args));
    } else {
      kl_standard_normal(p, std::span<U>(result), options(args));
    }
    MatrixWriter<U>(out, n, 0).append(n, result.data());
  });
  out.commit();
}

void run_pairwise(const Args& args) {
  const Inputs in = load(args);
  Output out(args.output, {Format::npy, Format::csv});
  dispatch(args, in, [&]<class T, class U>(const Gaussians<T>& p, const Gaussians<T>* q) {
    const std::int64_t n = p.n(), m = q ? q->n() : n;
    // Row blocks go to the file as they are done: the matrix is never held whole.
    std::optional<MatrixWriter<U>> writer;
    Progress progress("pairwise", show_progress(args));
    pairwise_kl_rows(p, q,
                     RowSink<U>([&](std::int64_t, std::int64_t rows, std::span<const U> block) {
                       if (!writer) writer.emplace(out, n, m);
                       writer->append(rows, block.data());
                     }),
                     options(args, &progress));
    if (!writer) writer.emplace(out, n, m);  // N = 0: the header alone
  });
  out.commit();
}

void run_knn(const Args& args) {
  const Inputs in = load(args);
  Output out(args.output, {Format::npz, Format::csv});
  dispatch(args, in, [&]<class T, class U>(const Gaussians<T>& p, const Gaussians<T>* q) {
    const std::int64_t n = p.n(), m = q ? q->n() : n;
    // The library checks k against M; the sizes here are only allocated for a valid k.
    const std::int64_t k = (args.k >= 1 && args.k <= m) ? args.k : 0;
    std::vector<std::int64_t> indices(static_cast<std::size_t>(n * k));
    std::vector<U> values(indices.size());
    Progress progress("knn", show_progress(args));
    if (q) {
      knn_kl(p, *q, args.k, indices, std::span<U>(values), options(args, &progress));
    } else {
      knn_kl(p, args.k, indices, std::span<U>(values), options(args, &progress));
    }
    write_knn(out, n, k, indices.data(), values.data());
  });
  out.commit();
}

}  // namespace gausskl::cli
