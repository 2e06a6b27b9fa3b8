// Distributions brought to one internal form, in double, once per distribution.
//
// Every family is S = B B^T + U U^T with a "base" B that is diagonal (diagonal and low-rank
// families) or lower triangular (full), and a low-rank factor U (D x R, R = 0 unless low rank).
// The pair formula (pair/kl.hpp) needs, per distribution:
//   mean; B; log diag B (from the input parameter directly, for the stable variance terms);
//   for a diagonal base, 1 / diag B; for a triangular base on the q side of a pair whose p is
//   not triangular, B^{-1} and the tail sums of its squared columns; for R > 0, with
//   V = B^{-1} U = Q R (thin QR, Q: D x K orthonormal, K = min(D, R)), Q and a factor L with
//   L L^T = I + R R^T, so that (I + V V^T)^{-1} = (I - Q Q^T) + Q (L L^T)^{-1} Q^T, and
//   log|C| = log|I + V^T V| = log|L L^T|.
#pragma once

#include <cstdint>
#include <vector>

namespace gausskl::cpu {

struct Prepared {
  std::int64_t d = 0;
  std::int64_t r = 0;
  std::int64_t k = 0;                // min(d, r)
  bool tri = false;                  // base is lower triangular [d*d], else diagonal [d]
  const double* mean = nullptr;      // [d]
  const double* base = nullptr;      // tri ? [d*d] row-major : [d]
  const double* inv = nullptr;       // tri ? [d*d] B^{-1} (if prepared) : [d] 1 / b
  const double* inv_tail = nullptr;  // tri: [d], sum_{i>k} (B^{-1})_{ik}^2 (with inv)
  const double* log_diag = nullptr;  // [d] log B_kk
  const double* factor = nullptr;    // [d*r] U, row-major
  const double* basis = nullptr;     // [d*k] Q, an orthonormal basis of range(B^{-1} U)
  const double* chol_c = nullptr;    // [k*k] L, lower triangular, L L^T = I + R R^T
  const double* var = nullptr;       // r > 0: [d] the diagonal B^2 as given (cov_diag)
  double logdet_c = 0;               // log|I + V^T V|
};

// Sizes and offsets (in doubles) of one prepared distribution.
struct Layout {
  std::int64_t d = 0, r = 0, k = 0;
  bool tri = false;
  bool with_inverse = false;  // tri only: keep B^{-1} and its column tails
  std::int64_t mean = 0, base = 0, inv = 0, inv_tail = 0, log_diag = 0, factor = 0, basis = 0,
               chol_c = 0, var = 0, logdet_c = 0, size = 0;

  Layout() = default;
  Layout(std::int64_t d_, std::int64_t r_, bool tri_, bool with_inverse_)
      : d(d_), r(r_), k(d_ < r_ ? d_ : r_), tri(tri_), with_inverse(tri_ && with_inverse_) {
    std::int64_t at = 0;
    auto take = [&at](std::int64_t n) {
      const std::int64_t start = at;
      at += n;
      return start;
    };
    mean = take(d);
    base = take(tri ? d * d : d);
    inv = take(tri ? (with_inverse ? d * d : 0) : d);
    inv_tail = take(with_inverse ? d : 0);
    log_diag = take(d);
    factor = take(d * r);
    basis = take(d * k);
    chol_c = take(k * k);
    var = take(r > 0 && !tri ? d : 0);  // the near-duplicates' form (low_rank_difference.hpp)
    logdet_c = take(1);
    size = at;
  }

  Prepared view(const double* p) const {
    Prepared out;
    out.d = d;
    out.r = r;
    out.k = k;
    out.tri = tri;
    out.mean = p + mean;
    out.base = p + base;
    out.inv = (tri && !with_inverse) ? nullptr : p + inv;
    out.inv_tail = with_inverse ? p + inv_tail : nullptr;
    out.log_diag = p + log_diag;
    out.factor = p + factor;
    out.basis = p + basis;
    out.chol_c = p + chol_c;
    out.var = (r > 0 && !tri) ? p + var : nullptr;
    out.logdet_c = p[logdet_c];
    return out;
  }
};

// Storage for `count` prepared distributions of one layout.
class PreparedBatch {
 public:
  PreparedBatch(const Layout& layout, std::int64_t count)
      : layout_(layout), data_(static_cast<std::size_t>(layout.size * count)) {}
  const Layout& layout() const { return layout_; }
  double* slot(std::int64_t k) { return data_.data() + k * layout_.size; }
  Prepared get(std::int64_t k) const { return layout_.view(data_.data() + k * layout_.size); }

 private:
  Layout layout_;
  std::vector<double> data_;
};

}  // namespace gausskl::cpu
