// Highway runtime dispatch of finish_diag_row (diag_pairs/finish.hpp): this file is compiled once
// per target and the best one the CPU supports is picked at run time. Lanes are doubles; float
// results are narrowed on the store, so no row of doubles is written back. The last, partial
// vector goes through small padded buffers (the Highway of Debian 12 has no LoadN / StoreN).
#undef HWY_TARGET_INCLUDE
// A path from src/, an include directory (__FILE__ is not reliable).
#define HWY_TARGET_INCLUDE "cpu/diag_pairs/finish.cpp"
#include "hwy/foreach_target.h"  // must come before highway.h
#include "hwy/highway.h"
//
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "cpu/diag_pairs/finish.hpp"

HWY_BEFORE_NAMESPACE();
namespace gausskl::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One vector of entries, in the scalar formula's order of operations (diag_pairs/finish.hpp); adds
// the number of entries marked to `marked`.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V FinishVector(D d, V q, V t, V abs_t, const DiagFinishRow& row, std::size_t& marked) {
  constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;
  const V half = hn::Set(d, 0.5);
  const V two_kl = hn::Add(hn::Sub(hn::Sub(q, hn::Set(d, row.d)), hn::Set(d, row.s)), t);
  const V sizes =
      hn::Add(hn::Add(hn::Add(q, hn::Set(d, row.d)), hn::Set(d, std::abs(row.s))), hn::Abs(t));
  const V sums = hn::Add(hn::Set(d, row.abs_s), abs_t);
  const V roundings = hn::Mul(
      hn::Set(d, kUnit), hn::Add(hn::Mul(hn::Set(d, 3.0), sizes), hn::Mul(hn::Set(d, 10.0), sums)));
  const V bound = hn::Add(
      hn::Add(hn::Mul(hn::Set(d, row.kernel_bound), q), hn::Set(d, row.kernel_abs)), roundings);
  const V kl = hn::Mul(half, two_kl);
  const V half_bound = hn::Mul(half, bound);
  const auto keep = hn::And(
      hn::Le(half_bound, hn::Mul(hn::Set(d, row.tolerance), hn::Add(hn::Abs(kl), hn::Set(d, 1.0)))),
      hn::Le(half_bound, hn::Mul(hn::Set(d, 1e-2), kl)));
  marked += hn::CountTrue(d, hn::Not(keep));
  return hn::IfThenElse(keep, kl, hn::Set(d, std::numeric_limits<double>::quiet_NaN()));
}

template <class U>
std::int64_t FinishRow(const double* q, const double* t, const double* abs_t, std::int64_t n,
                       const DiagFinishRow& row, U* out) {  // out may be q: no HWY_RESTRICT
  const hn::ScalableTag<double> d;
  const hn::Rebind<U, decltype(d)> du;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto store = [&](hn::Vec<decltype(d)> v, U* to) {
    if constexpr (std::is_same_v<U, double>) {
      hn::StoreU(v, d, to);
    } else {
      hn::StoreU(hn::DemoteTo(du, v), du, to);
    }
  };
  std::size_t marked = 0;
  std::int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    store(FinishVector(d, hn::LoadU(d, q + j), hn::LoadU(d, t + j), hn::LoadU(d, abs_t + j), row,
                       marked),
          out + j);
  }
  if (j == n) return static_cast<std::int64_t>(marked);
  constexpr std::size_t kMax = hn::MaxLanes(hn::ScalableTag<double>());
  HWY_ALIGN double q_tail[kMax] = {}, t_tail[kMax] = {}, abs_t_tail[kMax] = {};
  HWY_ALIGN U out_tail[kMax] = {};
  const std::int64_t rest = n - j;
  std::copy(q + j, q + n, q_tail);
  std::copy(t + j, t + n, t_tail);
  std::copy(abs_t + j, abs_t + n, abs_t_tail);
  // Padding lanes are not counted: the count of the tail's own lanes, one at a time.
  std::size_t ignored = 0;
  store(FinishVector(d, hn::Load(d, q_tail), hn::Load(d, t_tail), hn::Load(d, abs_t_tail), row,
                     ignored),
        out_tail);
  for (std::int64_t k = 0; k < rest; ++k)
    marked += std::isnan(out_tail[k]) ? 1 : 0;
  std::copy(out_tail, out_tail + rest, out + j);
  return static_cast<std::int64_t>(marked);
}

template <class U>
std::int64_t FinishTile(const double* q, std::int64_t ldq, std::int64_t rows, std::int64_t cols,
                        const double* s, const double* abs_s, const double* t, const double* abs_t,
                        const DiagFinishRow& row, U* out, std::int64_t ldo) {
  const hn::ScalableTag<double> d;
  DiagFinishRow each = row;
  std::int64_t marked = 0;
  if (cols != static_cast<std::int64_t>(hn::Lanes(d))) {
    for (std::int64_t r = 0; r < rows; ++r) {
      each.s = s[r];
      each.abs_s = abs_s[r];
      marked += FinishRow(q + r * ldq, t, abs_t, cols, each, out + r * ldo);
    }
    return marked;
  }
  // One vector per row (the symmetric kernel's tiles): the columns' terms loaded once.
  const hn::Rebind<U, decltype(d)> du;
  const auto t_v = hn::LoadU(d, t), abs_t_v = hn::LoadU(d, abs_t);
  std::size_t count = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    each.s = s[r];
    each.abs_s = abs_s[r];
    const auto v = FinishVector(d, hn::LoadU(d, q + r * ldq), t_v, abs_t_v, each, count);
    if constexpr (std::is_same_v<U, double>) {
      hn::StoreU(v, d, out + r * ldo);
    } else {
      hn::StoreU(hn::DemoteTo(du, v), du, out + r * ldo);
    }
  }
  return static_cast<std::int64_t>(count);
}

std::int64_t FinishTileF64(const double* q, std::int64_t ldq, std::int64_t rows, std::int64_t cols,
                           const double* s, const double* abs_s, const double* t,
                           const double* abs_t, const DiagFinishRow& row, double* out,
                           std::int64_t ldo) {
  return FinishTile(q, ldq, rows, cols, s, abs_s, t, abs_t, row, out, ldo);
}
std::int64_t FinishTileF32(const double* q, std::int64_t ldq, std::int64_t rows, std::int64_t cols,
                           const double* s, const double* abs_s, const double* t,
                           const double* abs_t, const DiagFinishRow& row, float* out,
                           std::int64_t ldo) {
  return FinishTile(q, ldq, rows, cols, s, abs_s, t, abs_t, row, out, ldo);
}

std::int64_t FinishRowF64(const double* q, const double* t, const double* abs_t, std::int64_t n,
                          const DiagFinishRow& row, double* out) {
  return FinishRow(q, t, abs_t, n, row, out);
}
std::int64_t FinishRowF32(const double* q, const double* t, const double* abs_t, std::int64_t n,
                          const DiagFinishRow& row, float* out) {
  return FinishRow(q, t, abs_t, n, row, out);
}

}  // namespace gausskl::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gausskl::cpu {

HWY_EXPORT(FinishRowF64);
HWY_EXPORT(FinishRowF32);
HWY_EXPORT(FinishTileF64);
HWY_EXPORT(FinishTileF32);

template <>
std::int64_t finish_diag_tile<double>(const double* q, std::int64_t ldq, std::int64_t rows,
                                      std::int64_t cols, const double* s, const double* abs_s,
                                      const double* t, const double* abs_t,
                                      const DiagFinishRow& row, double* out,
                                      std::int64_t ldo) noexcept {
  return HWY_DYNAMIC_DISPATCH(FinishTileF64)(q, ldq, rows, cols, s, abs_s, t, abs_t, row, out, ldo);
}
template <>
std::int64_t finish_diag_tile<float>(const double* q, std::int64_t ldq, std::int64_t rows,
                                     std::int64_t cols, const double* s, const double* abs_s,
                                     const double* t, const double* abs_t, const DiagFinishRow& row,
                                     float* out, std::int64_t ldo) noexcept {
  return HWY_DYNAMIC_DISPATCH(FinishTileF32)(q, ldq, rows, cols, s, abs_s, t, abs_t, row, out, ldo);
}

template <>
std::int64_t finish_diag_row<double>(const double* q, const double* t, const double* abs_t,
                                     std::int64_t n, const DiagFinishRow& row,
                                     double* out) noexcept {
  return HWY_DYNAMIC_DISPATCH(FinishRowF64)(q, t, abs_t, n, row, out);
}
template <>
std::int64_t finish_diag_row<float>(const double* q, const double* t, const double* abs_t,
                                    std::int64_t n, const DiagFinishRow& row, float* out) noexcept {
  return HWY_DYNAMIC_DISPATCH(FinishRowF32)(q, t, abs_t, n, row, out);
}

}  // namespace gausskl::cpu
#endif  // HWY_ONCE
