// Highway runtime dispatch of the vectorized checks of backend.hpp: compiled once per
// target (foreach_target.h).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/common/validate_rows.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <bit>
#include <cmath>
#include <cstdint>

#include "cpu/backend.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Both checks compare bit patterns as signed integers, whose order is that of the non-negative
// floats (NaN above inf; a set sign bit below them all): a running integer max (and min) per
// lane, two integer operations a vector and no mask, in two independent chains (half the time of
// float compares and mask ANDs: bench/README.md, "Measurements out of the code"). The partial last
// vector of a row is loaded masked (AVX2 and up, lanes past the row set to a value that passes)
// or checked element by element.
template <class T, bool kAbs>
bool Rows(const T* HWY_RESTRICT data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
          T lo, T hi) {
  using I = hwy::MakeSigned<T>;
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using VI = hn::Vec<decltype(di)>;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const VI magnitude = hn::Set(di, hwy::LimitsMax<I>());  // all bits but the sign
  VI most[2] = {hn::Set(di, I(0)), hn::Set(di, I(0))};
  VI least[2] = {hn::Set(di, hwy::LimitsMax<I>()), hn::Set(di, hwy::LimitsMax<I>())};
  const auto add = [&](int chain, VI bits) {
    if constexpr (kAbs) {
      most[chain] = hn::Max(most[chain], hn::And(bits, magnitude));
    } else {
      most[chain] = hn::Max(most[chain], bits);
      least[chain] = hn::Min(least[chain], bits);
    }
  };
  bool bad = false;
  const std::int64_t whole = n / lanes * lanes;
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* HWY_RESTRICT row = data + i * row_stride;
    std::int64_t h = 0;
    for (; h + 2 * lanes <= whole; h += 2 * lanes) {
      add(0, hn::BitCast(di, hn::LoadU(d, row + h)));
      add(1, hn::BitCast(di, hn::LoadU(d, row + h + lanes)));
    }
    if (h < whole) add(0, hn::BitCast(di, hn::LoadU(d, row + h)));
    if (whole < n) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
      const auto count = static_cast<std::size_t>(n - whole);
      const auto part = hn::MaskedLoad(hn::FirstN(d, count), d, row + whole);
      add(1, hn::BitCast(di,
                         hn::IfThenElse(hn::FirstN(d, count), part, hn::Set(d, kAbs ? T(0) : lo))));
#else
      for (std::int64_t k = whole; k < n; ++k) {
        const T x = kAbs ? std::abs(row[k]) : row[k];
        bad |= !(x >= lo && x <= hi);
      }
#endif
    }
  }
  const VI top = hn::Max(most[0], most[1]), bottom = hn::Min(least[0], least[1]);
  const auto outside = hn::Or(hn::Gt(top, hn::Set(di, std::bit_cast<I>(hi))),
                              hn::Lt(bottom, hn::Set(di, std::bit_cast<I>(kAbs ? T(0) : lo))));
  return !bad && hn::AllFalse(di, outside);
}

bool AbsWithinF32(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                  float bound) {
  return Rows<float, true>(data, rows, row_stride, n, 0.0f, bound);
}
bool AbsWithinF64(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                  double bound) {
  return Rows<double, true>(data, rows, row_stride, n, 0.0, bound);
}
bool WithinF32(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
               float lo, float hi) {
  return Rows<float, false>(data, rows, row_stride, n, lo, hi);
}
bool WithinF64(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
               double lo, double hi) {
  return Rows<double, false>(data, rows, row_stride, n, lo, hi);
}

// tril_rows (backend.hpp). Per vector, x * w with w = 0 left of the diagonal (x * 0 is 0 for
// finite x, NaN for inf and NaN) and w = 1 right of it must compare equal to 0 (-0 does, NaN does
// not); row r's w is window + d - 1 - r, window = [0] * d + [1] * (d - 1). The comparisons are
// ANDed as masks (a running sum would chain every vector on the add latency; Ne would not do: it is
// false for NaN), the diagonal is checked branch-free. p and q of 4096 x 32 float, 1 thread: the
// same pass autovectorized by GCC (SSE2 in this build) took 1.45 ms in L2 and 2.0-2.5 ms from L3,
// this kernel 0.93 and 1.55-1.9 ms (the per-row count_nonfinite + all_within of
// full_looks_valid: 4.4 ms from L3).
template <class T>
bool TrilRows(const T* HWY_RESTRICT m, std::int64_t row_stride, std::int64_t d,
              const T* HWY_RESTRICT window, double min_variance, double max_variance) {
  const hn::ScalableTag<T> dt;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dt));
  const auto zero = hn::Zero(dt);
  auto good = hn::FirstN(dt, static_cast<std::size_t>(lanes));
  bool bad_diagonal = false;
  const std::int64_t whole = d / lanes * lanes;
  for (std::int64_t r = 0; r < d; ++r) {
    const T* HWY_RESTRICT row = m + r * row_stride;
    const T* HWY_RESTRICT w = window + d - 1 - r;
    for (std::int64_t c = 0; c < whole; c += lanes)
      good = hn::And(good, hn::Eq(hn::Mul(hn::LoadU(dt, row + c), hn::LoadU(dt, w + c)), zero));
    for (std::int64_t c = whole; c < d; ++c)
      bad_diagonal |= !(row[c] * w[c] == 0);
    // The diagonal entry x > 0 with x^2 in [min_variance, max_variance], without branches.
    const double x = row[r], v = x * x;
    bad_diagonal |= !(x > 0) | !(v >= min_variance) | !(v <= max_variance);
  }
  return !bad_diagonal && hn::AllTrue(dt, good);
}

bool TrilRowsF32(const float* m, std::int64_t row_stride, std::int64_t d, const float* window,
                 double min_variance, double max_variance) {
  return TrilRows(m, row_stride, d, window, min_variance, max_variance);
}
bool TrilRowsF64(const double* m, std::int64_t row_stride, std::int64_t d, const double* window,
                 double min_variance, double max_variance) {
  return TrilRows(m, row_stride, d, window, min_variance, max_variance);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(AbsWithinF32);
HWY_EXPORT(AbsWithinF64);
HWY_EXPORT(WithinF32);
HWY_EXPORT(WithinF64);
HWY_EXPORT(TrilRowsF32);
HWY_EXPORT(TrilRowsF64);

bool all_abs_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, float bound) noexcept {
  return HWY_DYNAMIC_DISPATCH(AbsWithinF32)(data, rows, row_stride, n, bound);
}
bool all_abs_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride,
                         std::int64_t n, double bound) noexcept {
  return HWY_DYNAMIC_DISPATCH(AbsWithinF64)(data, rows, row_stride, n, bound);
}
bool all_within_rows(const float* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     float lo, float hi) noexcept {
  return HWY_DYNAMIC_DISPATCH(WithinF32)(data, rows, row_stride, n, lo, hi);
}
bool all_within_rows(const double* data, std::int64_t rows, std::int64_t row_stride, std::int64_t n,
                     double lo, double hi) noexcept {
  return HWY_DYNAMIC_DISPATCH(WithinF64)(data, rows, row_stride, n, lo, hi);
}
bool tril_rows(const float* m, std::int64_t row_stride, std::int64_t d, const float* window,
               double min_variance, double max_variance) noexcept {
  return HWY_DYNAMIC_DISPATCH(TrilRowsF32)(m, row_stride, d, window, min_variance, max_variance);
}
bool tril_rows(const double* m, std::int64_t row_stride, std::int64_t d, const double* window,
               double min_variance, double max_variance) noexcept {
  return HWY_DYNAMIC_DISPATCH(TrilRowsF64)(m, row_stride, d, window, min_variance, max_variance);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
