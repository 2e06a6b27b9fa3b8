// KL between two one-dimensional Gaussians through the installed library, checked against the
// univariate closed form KL(N(m1, s1^2) || N(m2, s2^2)) = log(s2 / s1) + (s1^2 + (m1 - m2)^2) /
// (2 s2^2) - 1/2, here KL(N(0, 1) || N(1, 2^2)) = log 2 + (1 + 1) / 8 - 1/2, written out below
// without the library.
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include "gausskl/gausskl.hpp"

int main() {
  const std::vector<double> mean = {0.0, 1.0}, stddev = {1.0, 2.0};
  const gausskl::DiagGaussians<double> g{gausskl::contiguous<double, 2>(mean.data(), {2, 1}),
                                         gausskl::contiguous<double, 2>(stddev.data(), {2, 1}),
                                         gausskl::DiagParam::stddev};
  std::vector<double> kl(4);
  gausskl::pairwise_kl(g, std::span<double>(kl));
  const double expected = std::log(2.0) + 0.25 - 0.5;
  const bool ok = kl[0] == 0 && kl[3] == 0 && std::abs(kl[1] - expected) <= 1e-15;
  std::printf("gausskl %s: KL(p_0 || p_1) = %.17g, expected %.17g: %s\n", gausskl::version(), kl[1],
              expected, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
