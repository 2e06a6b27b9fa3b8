// Random and adversarial Gaussians, emitted in any parameterization and precision.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gausskl/types.hpp"
#include "support/batches.hpp"

namespace gausskl::test {

using Rng = std::mt19937_64;

enum class Family { diag, full, lowrank };

// The distributions themselves, in double. Batches in every parameterization and precision are
// emitted from them, so the same Gaussians can be given as std, var, logvar or precision.
struct DiagSpec {
  std::int64_t n = 0, d = 0;
  std::vector<double> mean, stddev;  // [N, D], [N, D]
};
struct FullSpec {
  std::int64_t n = 0, d = 0;
  std::vector<double> mean, tril;  // [N, D], [N, D, D] lower triangular, positive diagonal
};
struct LowRankSpec {
  std::int64_t n = 0, d = 0, r = 0;
  std::vector<double> mean, factor, diag;  // [N, D], [N, D, R], [N, D]
};
using Spec = std::variant<DiagSpec, FullSpec, LowRankSpec>;

struct GenOptions {
  double mean_offset = 0;  // means are N(mean_offset, 1) per entry
  // Standard deviations are log-uniform in [scale_min, scale_max]: the diagonal of a DiagSpec,
  // the diagonal of L in L = diag(s) (I + 0.3 G / sqrt(D)) with G strictly lower and N(0, 1),
  // and sqrt(cov_diag) of a low-rank W W^T + diag(s^2) with W = factor_scale diag(s) G / sqrt(R).
  double scale_min = 0.5, scale_max = 2;
  std::int64_t rank = 3;    // R of low-rank Gaussians
  double factor_scale = 1;  // how far W W^T outweighs diag(s^2)
};

// Means offset by 1e3, standard deviations spread over 1e-3 .. 1e3.
inline constexpr GenOptions kAdversarial{1e3, 1e-3, 1e3};

Spec random_spec(Rng& rng, Family family, std::int64_t n, std::int64_t d,
                 const GenOptions& options = {});

// A near-duplicate: every parameter x (means, scales, factors) becomes x (1 + rel u) with u
// uniform in [-1, 1].
Spec perturbed(Rng& rng, const Spec& spec, double rel);

// The kinds of data every oracle test runs on. Near-duplicates and identical pairs derive q from
// an adversarial p (so p and q share family and row count).
enum class Data { random, adversarial, near_duplicate_1e4, near_duplicate_1e8, identical };

std::vector<Data> all_data();
std::string name(Data data);
bool q_derived_from_p(Data data);

// p with n rows and q with m rows (m must equal n, and fq equal fp, if q_derived_from_p).
std::pair<Spec, Spec> make_specs(Rng& rng, Data data, Family fp, Family fq, std::int64_t n,
                                 std::int64_t m, std::int64_t d, std::int64_t rank = 3);

// The given rows of spec, in that order; rows may repeat.
Spec take_rows(const Spec& spec, const std::vector<std::int64_t>& rows);

// A family and the parameterization its batches are emitted in (the other family's field is
// ignored).
struct Layout {
  Family family = Family::diag;
  DiagParam diag = DiagParam::stddev;
  FullParam full = FullParam::scale_tril;
  bool log_diagonal = false;  // packed_scale_tril only
};

// diag x 4, full x 5 (packed_scale_tril with and without log_diagonal), low rank
std::vector<Layout> all_layouts();
std::vector<Layout> packed_layouts();  // packed_scale_tril without and with log_diagonal
// What packed factors are tested against: std, scale_tril, both packed forms, low rank.
std::vector<Layout> packed_partners();
std::vector<Layout> family_layouts();  // std, scale_tril, low rank
Layout layout_of(Family family);       // the family's first layout: std, scale_tril, low rank
// e.g. "diag/logvar", "full/scale_tril", "full/packed_scale_tril/log_diagonal", "lowrank"
std::string name(const Layout& layout);
std::string name(Family family);
std::string pair_name(Family p, Family q);  // e.g. "diag/full"

// Emits in T the parameterization from the spec, each value computed in long double and then
// rounded once. Symmetric matrices are exactly symmetric. packed_scale_tril is L's lower
// triangle row by row, with log_diagonal its diagonal as log L_rr.
template <class T>
DiagBatch<T> make_diag(const DiagSpec& spec, DiagParam param);
template <class T>
FullBatch<T> make_full(const FullSpec& spec, FullParam param, bool log_diagonal = false);
template <class T>
LowRankBatch<T> make_lowrank(const LowRankSpec& spec);
// spec's family must be layout.family.
template <class T>
Batch<T> make_batch(const Spec& spec, const Layout& layout);

}  // namespace gausskl::test
