#include "cpu/knn/loops.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "cpu/common/parallel.hpp"
#include "cpu/common/saturating.hpp"
#include "cpu/knn/topk.hpp"

namespace gausskl::cpu {

void knn_block(std::int64_t m, std::int64_t scratch_size, const ExactPair& exact_of,
               std::int64_t lo, std::int64_t hi, const double* block, double tolerance,
               std::int64_t k, bool exclude_self, std::int64_t* indices, double* values,
               int threads) {
  const std::int64_t per_worker = m + scratch_size;
  std::vector<std::int64_t> order(static_cast<std::size_t>(threads * m));
  std::vector<double> work(static_cast<std::size_t>(threads * per_worker));
  parallel_for(hi - lo, threads, [&](int w, std::int64_t a, std::int64_t b) {
    std::int64_t* idx = order.data() + w * m;
    double* exact = work.data() + w * per_worker;
    double* scratch = exact + m;
    for (std::int64_t i = lo + a; i < lo + b; ++i) {
      const double* row = block + (i - lo) * m;
      std::iota(idx, idx + m, std::int64_t{0});
      std::int64_t count = m;
      if (exclude_self) count = std::remove(idx, idx + m, i) - idx;
      smallest_k(row, idx, count, k);
      std::int64_t candidates = k;
      const double* ranked = row;
      if (tolerance > 0) {
        // Every j whose value could still be below the k-th once errors are counted, re-scored
        // exactly: the true k smallest are among them.
        const double kth = row[idx[k - 1]];
        const double limit = kth + tolerance * (std::abs(kth) + 1);
        candidates = std::partition(idx + k, idx + count,
                                    [&](std::int64_t j) {
                                      return row[j] - tolerance * (std::abs(row[j]) + 1) <= limit;
                                    }) -
                     idx;
        for (std::int64_t c = 0; c < candidates; ++c)
          exact[idx[c]] = exact_of(i, idx[c], scratch);
        smallest_k(exact, idx, candidates, k);
        ranked = exact;
      }
      for (std::int64_t r = 0; r < k; ++r) {
        indices[(i - lo) * k + r] = idx[r];
        values[(i - lo) * k + r] = ranked[idx[r]];
      }
    }
  });
}

std::int64_t knn_block_bytes(std::int64_t m, std::int64_t pair_scratch, int threads) {
  return sat_mul(sat_mul(8, threads), sat_add(2 * m, pair_scratch));
}

}  // namespace gausskl::cpu
