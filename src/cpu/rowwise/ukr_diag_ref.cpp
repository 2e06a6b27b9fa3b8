// The scalar reference of the row-wise diagonal kernel (rowwise/ukr_diag.hpp).
#include <algorithm>

#include "cpu/common/diag_terms.hpp"
#include "cpu/common/stable.hpp"
#include "cpu/rowwise/ukr_diag.hpp"

namespace gausskl::cpu {

template <class T>
void rowwise_diag_ref(const DiagGaussians<T>& p, const DiagGaussians<T>* q, std::int64_t lo,
                      std::int64_t hi, double* out) noexcept {
  const std::int64_t d = p.mean.shape[1];
  const bool p_once = p.mean.shape[0] == 1, q_once = q && q->mean.shape[0] == 1;
  for (std::int64_t i = lo; i < hi; ++i) {
    const std::int64_t ip = p_once ? 0 : i, iq = q_once ? 0 : i;
    double sum = 0;
    for (std::int64_t h = 0; h < d; ++h) {
      double b = 0, inv_b = 0, log_b_p = 0, log_b_q = 0, nu = 0, inv_b_q = 1;
      diag_terms(p.param, static_cast<double>(p.scale(ip, h)), &b, &inv_b, &log_b_p);
      if (q) {
        diag_terms(q->param, static_cast<double>(q->scale(iq, h)), &b, &inv_b_q, &log_b_q);
        nu = static_cast<double>(q->mean(iq, h));
      }
      const double a = (static_cast<double>(p.mean(ip, h)) - nu) * inv_b_q;
      sum += expm1_minus_x(2 * (log_b_p - log_b_q)) + a * a;
    }
    out[i - lo] = 0.5 * std::max(sum, 0.0);
  }
}

template void rowwise_diag_ref(const DiagGaussians<float>&, const DiagGaussians<float>*,
                               std::int64_t, std::int64_t, double*) noexcept;
template void rowwise_diag_ref(const DiagGaussians<double>&, const DiagGaussians<double>*,
                               std::int64_t, std::int64_t, double*) noexcept;

}  // namespace gausskl::cpu
