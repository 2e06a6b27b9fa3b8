#include "cli/fit.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/library_call.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "gausskl/moments.hpp"
#include "io/csv.hpp"
#include "io/input_file.hpp"
#include "io/npy_rows.hpp"
#include "io/npz.hpp"

namespace gausskl::cli {
namespace {

// Bytes of rows read and added at a time: large enough that the library's chunks are full.
constexpr std::int64_t kBlockBytes = std::int64_t{16} << 20;
// Bytes of CSV text parsed at a time; parsing, not the accumulator, bounds the speed.
constexpr std::uint64_t kCsvBlockBytes = std::uint64_t{1} << 20;

std::unique_ptr<io::NpyRows> open_rows(const std::string& spec) {
  if (spec.ends_with(".npy")) return io::NpyRows::open_npy(spec);
  if (spec.ends_with(".npz")) return io::NpyRows::open_npz_entry(spec, "");
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && spec.substr(0, colon).ends_with(".npz")) {
    return io::NpyRows::open_npz_entry(spec.substr(0, colon), spec.substr(colon + 1));
  }
  throw std::invalid_argument("[fit] --x " + spec +
                              ": give a .npy file, an .npz array as FILE.npz:NAME (or an .npz "
                              "holding one array), or a .csv table of rows");
}

template <class T>
void add_rows(io::NpyRows& rows, MomentAccumulator& acc, Progress& progress) {
  const std::int64_t n = rows.rows(), d = rows.cols();
  const std::int64_t block = std::max<std::int64_t>(
      1, std::min<std::int64_t>(n, kBlockBytes / std::max<std::int64_t>(1, d * sizeof(T))));
  std::vector<T> buffer(static_cast<std::size_t>(n > 0 ? block * d : 0));
  for (std::int64_t r = 0; r < n; r += block) {
    const std::int64_t count = std::min(block, n - r);
    rows.read(count, buffer.data());
    call_library("fit", {}, [&] { acc.update(contiguous<T, 2>(buffer.data(), {count, d}), r); });
    progress(r + count, n);
  }
  rows.finish();
}

// A CSV file's rows, parsed kCsvBlockBytes of text at a time (text has no random access, and a
// file of features can exceed memory) and added kBlockBytes of values at a time; the first row
// decides D. Progress is estimated from the bytes read.
std::unique_ptr<MomentAccumulator> add_csv_rows(const std::string& path, MomentFamily family,
                                                int threads, Progress& progress, std::int64_t& n) {
  const io::InputFile file(path);
  io::CsvRowParser parser(path);
  std::unique_ptr<MomentAccumulator> acc;
  std::string text;
  std::vector<double> values;
  std::int64_t added = 0;  // rows given to acc
  const std::uint64_t size = file.size();
  std::uint64_t offset = 0;
  const auto add = [&] {
    const std::int64_t d = parser.columns(), count = parser.rows() - added;
    if (count == 0) return;
    if (!acc) {
      call_library("fit", {},
                   [&] { acc = std::make_unique<MomentAccumulator>(d, family, threads); });
    }
    call_library("fit", {}, [&] {
      acc->update(contiguous<double, 2>(values.data(), {count, d}), added);
    });
    added += count;
    values.clear();
  };
  while (offset < size) {
    const std::uint64_t take = std::min<std::uint64_t>(size - offset, kCsvBlockBytes);
    const std::size_t kept = text.size();
    text.resize(kept + take);
    file.read_at(offset, std::as_writable_bytes(std::span(text).subspan(kept)));
    offset += take;
    // Whole lines only, but the file's last line whether or not a newline ends it.
    const std::size_t end = offset < size ? text.rfind('\n') + 1 : text.size();
    if (end == 0) continue;  // no line end yet: read more
    parser.feed(std::string_view(text).substr(0, end), values);
    text.erase(0, end);
    if (static_cast<std::int64_t>(values.size() * sizeof(double)) >= kBlockBytes ||
        offset == size) {
      add();
    }
    const double done = static_cast<double>(offset) / static_cast<double>(size);
    progress(parser.rows(), static_cast<std::int64_t>(static_cast<double>(parser.rows()) / done));
  }
  parser.finish({});  // a file of no rows is an error
  n = parser.rows();
  return acc;
}

}  // namespace

CLI::App* add_fit_command(CLI::App& app, FitArgs& args) {
  CLI::App* fit = app.add_subcommand(
      "fit",
      "the Gaussian fitted to rows of features, as np.cov (FID's statistics): writes mean [D], "
      "covariance [D, D] (var [D] with --family diag) and count to an .npz");
  fit->add_option(
         "--x", args.x,
         "the rows [N, D]: FILE.npy (memory-mapped), FILE.npz:NAME (an array of an "
         ".npz; FILE.npz if it holds one), or FILE.csv (one row per line; a header row "
         "is skipped); float32 or float64, read a block of rows at a time (CSV a MiB of text at a "
         "time)")
      ->required();
  fit->add_option("-o,--output", args.output,
                  "STATS.npz: arrays mean, covariance (or var) float64 and count int64; written "
                  "whole or not at all")
      ->required();
  fit->add_option("--ddof", args.ddof,
                  "the covariance divides the scatter by N - DDOF: 1 (default) as np.cov and "
                  "pytorch-fid, 0 as StyleGAN's FID")
      ->check(CLI::NonNegativeNumber);
  fit->add_option("--family", args.family,
                  "full (default): the D x D covariance; diag: the variances only")
      ->check(CLI::IsMember({"full", "diag"}));
  fit->add_option("--threads", args.threads, "worker threads (default 0: all cores)")
      ->check(CLI::NonNegativeNumber);
  fit->add_flag("--quiet", args.quiet,
                "no progress line on stderr (none is shown when stderr is not a terminal "
                "either)");
  fit->footer(
      "\nExamples (FID from Inception features, then the Frechet distance):\n"
      "  gausskl fit --x real_features.npy -o real.npz\n"
      "  gausskl fit --x fake.npz:features -o fake.npz\n"
      "  gausskl kl --p real.npz --q fake.npz --divergence wasserstein2 -o -\n"
      "  gausskl fit --x feats.csv --ddof 0 -o stats.npz   # divide by N, as StyleGAN\n");
  return fit;
}

void run_fit(const FitArgs& args) {
  if (args.output == "-") {
    throw std::invalid_argument(
        "[fit] -o - is not possible: the statistics are arrays, written to "
        "an .npz file (-o STATS.npz)");
  }
  const MomentFamily family = args.family == "diag" ? MomentFamily::diag : MomentFamily::full;
  Progress progress("fit", !args.quiet && isatty(fileno(stderr)) ? Progress::Mode::terminal
                                                                 : Progress::Mode::off);
  const auto check_ddof = [&](std::int64_t n, const std::string& where) {
    if (args.ddof >= n) {
      throw std::invalid_argument("[fit] --ddof " + std::to_string(args.ddof) +
                                  " needs more than " + std::to_string(args.ddof) + " rows; " +
                                  where + " has " + std::to_string(n));
    }
  };
  std::unique_ptr<MomentAccumulator> acc;
  std::optional<Output> out;  // opened once the input is known to be readable
  if (args.x.ends_with(".csv")) {
    out.emplace(args.output, std::vector<Format>{Format::npz});
    std::int64_t n = 0;
    acc = add_csv_rows(args.x, family, args.threads, progress, n);
    check_ddof(n, args.x);
  } else {
    const std::unique_ptr<io::NpyRows> rows = open_rows(args.x);
    check_ddof(rows->rows(), rows->where());
    out.emplace(args.output, std::vector<Format>{Format::npz});
    call_library("fit", {}, [&] {
      acc = std::make_unique<MomentAccumulator>(rows->cols(), family, args.threads);
    });
    if (rows->dtype() == io::DType::float32) {
      add_rows<float>(*rows, *acc, progress);
    } else {
      add_rows<double>(*rows, *acc, progress);
    }
  }
  const std::int64_t d = acc->d();
  const bool full = family == MomentFamily::full;
  std::vector<double> cov(static_cast<std::size_t>(full ? d * d : d));
  call_library("fit", {}, [&] { acc->covariance(cov, args.ddof); });
  const std::int64_t count = acc->count();
  const std::vector<io::NpzEntry> entries = {
      {"mean", io::DType::float64, {d}, acc->mean().data()},
      {full ? "covariance" : "var", io::DType::float64,
       full ? std::vector<std::int64_t>{d, d} : std::vector<std::int64_t>{d}, cov.data()},
      {"count", io::DType::int64, {}, &count},
  };
  try {
    io::write_npz(out->file(), entries);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + " (writing " + out->name() + ")");
  }
  out->commit();
}

}  // namespace gausskl::cli
