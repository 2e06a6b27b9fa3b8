// Running moments of rows (MomentAccumulator's arithmetic): each chunk's own mean and centred
// scatter, joined to the running ones by Chan, Golub & LeVeque's pairwise update.
#pragma once

#include <cstdint>

#include "gausskl/types.hpp"

namespace gausskl::cpu {

// The moments updated in place: `count` rows with mean [d] and scatter, the lower triangle of a
// row-major [d, d] (full) or the diagonal [d] (not full).
struct Moments {
  std::int64_t d = 0;
  bool full = true;
  std::int64_t* count = nullptr;
  double* mean = nullptr;
  double* scatter = nullptr;
};

// Adds the rows of x [N, d] (finite: validated by the caller). Allocates its chunk buffers first
// (std::bad_alloc is the only exception, and then nothing has changed).
template <class T>
void moments_update(const Moments& m, const View<T, 2>& x, int workers);

// Adds the moments of other rows: count_b >= 0 rows of mean_b [d] and scatter_b (the same layout
// as m's).
void moments_merge(const Moments& m, std::int64_t count_b, const double* mean_b,
                   const double* scatter_b);

}  // namespace gausskl::cpu
