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

// Calls body.template operator()<T, U>() with T the input precision (float64 if any input
// array is float64) and U the result precision (--dtype, default T).
template <class Body>
void dispatch(const Args& args, const Inputs& in, Body&& body) {
  const bool t64 = compute_in_double(in);
  const bool u64 = args.dtype.empty() ? t64 : args.dtype == "float64";
  if (t64 && u64) body.template operator()<double, double>();
  if (t64 && !u64) body.template operator()<double, float>();
  if (!t64 && u64) body.template operator()<float, double>();
  if (!t64 && !u64) body.template operator()<float, float>();
}

Options options(const Args& args) {
  Options o;
  o.threads = args.threads;
  o.exclude_self = args.exclude_self;
  o.memory_budget = args.memory_budget;
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
  dispatch(args, in, [&]<class T, class U>() {
    const Batch<T> p(in.p);
    std::optional<Batch<T>> q;
    if (in.q) q.emplace(*in.q);
    const Gaussians<T>& pg = p.gaussians();
    const std::int64_t n = q ? (pg.n() == 1 ? q->gaussians().n() : pg.n()) : pg.n();
    std::vector<U> result(static_cast<std::size_t>(n));
    if (q) {
      kl(pg, q->gaussians(), std::span<U>(result), options(args));
    } else {
      kl_standard_normal(pg, std::span<U>(result), options(args));
    }
    MatrixWriter<U>(out, n, 0).append(n, result.data());
  });
  out.commit();
}

void run_pairwise(const Args& args) {
  const Inputs in = load(args);
  Output out(args.output, {Format::npy, Format::csv});
  dispatch(args, in, [&]<class T, class U>() {
    const Batch<T> p(in.p);
    std::optional<Batch<T>> q;
    if (in.q) q.emplace(*in.q);
    const std::int64_t n = p.gaussians().n(), m = q ? q->gaussians().n() : n;
    // Row blocks go to the file as they are done: the matrix is never held whole.
    std::optional<MatrixWriter<U>> writer;
    Progress progress("pairwise", show_progress(args));
    Options opts = options(args);
    opts.progress = [&](std::int64_t done, std::int64_t total) { progress(done, total); };
    pairwise_kl_rows(p.gaussians(), q ? &q->gaussians() : nullptr,
                     RowSink<U>([&](std::int64_t, std::int64_t rows, std::span<const U> block) {
                       if (!writer) writer.emplace(out, n, m);
                       writer->append(rows, block.data());
                     }),
                     opts);
    if (!writer) writer.emplace(out, n, m);  // N = 0: the header alone
  });
  out.commit();
}

void run_knn(const Args& args) {
  const Inputs in = load(args);
  Output out(args.output, {Format::npz, Format::csv});
  dispatch(args, in, [&]<class T, class U>() {
    const Batch<T> p(in.p);
    std::optional<Batch<T>> q;
    if (in.q) q.emplace(*in.q);
    const std::int64_t n = p.gaussians().n();
    // The library checks k against M; the sizes here are only allocated for a valid k.
    const std::int64_t m = q ? q->gaussians().n() : n;
    const std::int64_t k = (args.k >= 1 && args.k <= m) ? args.k : 0;
    std::vector<std::int64_t> indices(static_cast<std::size_t>(n * k));
    std::vector<U> values(indices.size());
    Progress progress("knn", show_progress(args));
    Options opts = options(args);
    opts.progress = [&](std::int64_t done, std::int64_t total) { progress(done, total); };
    if (q) {
      knn_kl(p.gaussians(), q->gaussians(), args.k, indices, std::span<U>(values), opts);
    } else {
      knn_kl(p.gaussians(), args.k, indices, std::span<U>(values), opts);
    }
    write_knn(out, n, k, indices.data(), values.data());
  });
  out.commit();
}

}  // namespace gausskl::cli
