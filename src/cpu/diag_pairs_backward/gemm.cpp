#include "cpu/diag_pairs_backward/gemm.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.hpp"
#include "cpu/diag_pairs_backward/ukr.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

static_assert(kGemmMC % 12 == 0 && kGemmMC % 8 == 0,
              "kGemmMC must be a multiple of every target's mr");

// 64-byte aligned doubles: the packed panels are read by full-vector loads.
struct Free {
  void operator()(double* ptr) const noexcept { ::operator delete[](ptr, std::align_val_t{64}); }
};
using Doubles = std::unique_ptr<double[], Free>;
Doubles allocate(std::int64_t count) {
  return Doubles(static_cast<double*>(
      ::operator new[](sizeof(double) * static_cast<std::size_t>(std::max<std::int64_t>(count, 1)),
                       std::align_val_t{64})));
}

// The product columns are cut into chunks of kBackwardChunkH dimensions h; chunk c holds
// 2 * width(c) columns, [x(h) for h in the chunk, y(h) for h in the chunk], packed in panels
// of nr columns, each panel K steps of nr values.
struct Chunks {
  std::int64_t d, nr, count;
  std::int64_t h0(std::int64_t c) const { return c * kBackwardChunkH; }
  std::int64_t width(std::int64_t c) const { return std::min(kBackwardChunkH, d - h0(c)); }
  std::int64_t panels(std::int64_t c) const { return (2 * width(c) + nr - 1) / nr; }
  // Offset of chunk c in a packed B of depth k, in doubles: every chunk before c is full.
  std::int64_t offset(std::int64_t c, std::int64_t k) const { return c * panels(0) * nr * k; }
  std::int64_t size(std::int64_t k) const {
    return offset(count - 1, k) + panels(count - 1) * nr * k;
  }
};

// nr doubles from `from` to `to`: a fixed-size copy for the targets' panel widths (inlined as
// vector moves; a loop of runtime length becomes a call to memmove, slower than the copy).
inline void copy_panel_row(const double* from, std::int64_t nr, double* to) noexcept {
  const auto fixed = [&](auto width) { std::memcpy(to, from, sizeof(double) * width.value); };
  switch (nr) {
    case 4:
      return fixed(std::integral_constant<std::size_t, 4>());
    case 8:
      return fixed(std::integral_constant<std::size_t, 8>());
    case 16:
      return fixed(std::integral_constant<std::size_t, 16>());
    default:
      std::copy(from, from + nr, to);
  }
}

// B [k, 2 D] in chunks and panels: row l from x(l, h) and y(l, h), which row(l, x, y) writes
// for every h; padding columns are zero. `rows` holds `block` pairs of [d] buffers x, y: the
// rows are made `block` at a time and written panel by panel, `block` steps of a panel in one
// run (row by row, each step went to another panel, k * nr doubles on: a cache miss per step, a
// fifth of the backward at B = 100).
template <class Row>
void pack_b(const Chunks& ch, std::int64_t k, std::int64_t l0, std::int64_t l1, Row&& row,
            std::int64_t block, double* rows, double* dst) {
  const std::int64_t nr = ch.nr, d = ch.d;
  for (std::int64_t lb = l0; lb < l1; lb += block) {
    const std::int64_t count = std::min(block, l1 - lb);
    for (std::int64_t r = 0; r < count; ++r)
      row(lb + r, rows + r * 2 * d, rows + r * 2 * d + d);
    for (std::int64_t c = 0; c < ch.count; ++c) {
      const std::int64_t h0 = ch.h0(c), w = ch.width(c);
      double* panel = dst + ch.offset(c, k) + lb * nr;  // panel 0's step lb
      for (std::int64_t col0 = 0; col0 < 2 * w; col0 += nr, panel += k * nr) {
        // A panel within x or within y (every panel when nr divides the chunk's width) is
        // copied; the others lane by lane, with no division per value.
        const std::int64_t from = col0 + nr <= w                    ? h0 + col0
                                  : col0 >= w && col0 + nr <= 2 * w ? d + h0 + (col0 - w)
                                                                    : -1;
        if (from >= 0) {
          for (std::int64_t r = 0; r < count; ++r)
            copy_panel_row(rows + r * 2 * d + from, nr, panel + r * nr);
          continue;
        }
        for (std::int64_t r = 0; r < count; ++r) {
          const double* x = rows + r * 2 * d;
          for (std::int64_t lane = 0; lane < nr; ++lane) {
            const std::int64_t col = col0 + lane;
            panel[r * nr + lane] = col < w ? x[h0 + col] : col < 2 * w ? x[d + h0 + col - w] : 0.0;
          }
        }
      }
    }
  }
}

// A block: rows [row0, row0 + rows) of G (transposed: of G^T) at depth [pc, pc + kc), in
// micro-panels of mr rows, each kc steps of mr values; padding rows are zero.
template <class T>
void pack_a(const T* grad, std::int64_t m, bool transposed, std::int64_t row0, std::int64_t rows,
            std::int64_t pc, std::int64_t kc, std::int64_t mr, double* dst) noexcept {
  for (std::int64_t ir = 0; ir < rows; ir += mr) {
    double* panel = dst + ir * kc;
    const std::int64_t live = std::min(mr, rows - ir);
    for (std::int64_t l = 0; l < kc; ++l) {
      double* step = panel + l * mr;
      for (std::int64_t r = 0; r < live; ++r) {
        const std::int64_t row = row0 + ir + r, depth = pc + l;
        step[r] = static_cast<double>(transposed ? grad[depth * m + row] : grad[row * m + depth]);
      }
      std::fill(step + live, step + mr, 0.0);
    }
  }
}

// C [rows, ldc] = (rows of G or G^T) . (chunk of B) for one chunk of `cols` columns, depth k.
template <class T>
void product_block(const GemmKernel& kernel, const T* grad, std::int64_t m, bool transposed,
                   std::int64_t row0, std::int64_t rows, std::int64_t k, const double* b,
                   std::int64_t cols, double* a_buf, double* c, std::int64_t ldc) noexcept {
  const std::int64_t mr = kernel.tile.mr, nr = kernel.tile.nr;
  for (std::int64_t pc = 0; pc < k; pc += kGemmKC) {
    const std::int64_t kc = std::min(kGemmKC, k - pc);
    pack_a(grad, m, transposed, row0, rows, pc, kc, mr, a_buf);
    for (std::int64_t jr = 0; jr < cols; jr += nr) {
      const double* b_panel = b + (jr / nr) * k * nr + pc * nr;
      for (std::int64_t ir = 0; ir < rows; ir += mr) {
        kernel.ukr(std::min(mr, rows - ir), std::min(nr, cols - jr), kc, a_buf + ir * kc, b_panel,
                   pc > 0, c + ir * ldc + jr, ldc, kernel.tile);
      }
    }
  }
}

// Sums of rows (transposed: columns) [row0, row0 + rows) of G, each in one fixed order.
template <class T>
void grad_sums(const T* grad, std::int64_t n, std::int64_t m, bool transposed, std::int64_t row0,
               std::int64_t rows, double* out) noexcept {
  if (transposed) {
    std::fill(out, out + rows, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      const T* row = grad + i * m + row0;
      for (std::int64_t r = 0; r < rows; ++r)
        out[r] += static_cast<double>(row[r]);
    }
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = grad + (row0 + r) * m;
    double acc[4] = {0, 0, 0, 0};  // four chains: a fixed order, not one dependent chain
    std::int64_t j = 0;
    for (; j + 4 <= m; j += 4) {
      for (int x = 0; x < 4; ++x)
        acc[x] += static_cast<double>(row[j + x]);
    }
    for (; j < m; ++j)
      acc[0] += static_cast<double>(row[j]);
    out[r] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
}

}  // namespace

template <class T>
void pairwise_backward_gemm(const CentredSides<T>& sides, const T* grad, const Gradients<T>& dp,
                            const Gradients<T>& dq, int workers) {
  const bool self = sides.self;
  const std::int64_t n = sides.p_at_p.n(), m = sides.q_at_q.n(), d = sides.p_at_p.d();
  const bool want_p = !dp.mean.empty() || !dp.scale.empty();
  const bool want_q = !self && (!dq.mean.empty() || !dq.scale.empty());
  if (!want_p && !want_q) return;
  const GemmKernel kernel = gemm_kernel();
  const std::int64_t nr = kernel.tile.nr;
  const Chunks ch{d, nr, (d + kBackwardChunkH - 1) / kBackwardChunkH};
  const std::int64_t ldc = (2 * kBackwardChunkH + nr - 1) / nr * nr;

  // Workspace, all allocated before any work: packed B of each product wanted, and per worker
  // an A block, the two product blocks, the sums of G and rows of operands and gradients.
  const bool p_products = want_p, q_products = want_q || self;
  Doubles b_p = p_products ? allocate(ch.size(m)) : nullptr;  // G [lam, nu lam]: depth m
  Doubles b_q = q_products ? allocate(ch.size(n)) : nullptr;  // G^T [mu, v + mu^2]: depth n
  // Rows packed per block: kPackRows, fewer where that many rows of 2 D doubles would pass
  // kPackBlockBytes (large D: the scratch stays near the 2 D doubles of one row) or exceed the
  // rows a worker packs (small batches).
  const std::int64_t b_rows = (p_products ? m : 0) + (q_products ? n : 0);
  const std::int64_t row_bytes = 2 * std::max<std::int64_t>(d, 1) * std::int64_t{sizeof(double)};
  const std::int64_t pack_rows = std::clamp<std::int64_t>(
      kPackBlockBytes / row_bytes, 1, std::min(kPackRows, (b_rows + workers - 1) / workers));
  const std::int64_t row_values = std::max(pack_rows * 2 * d, 6 * kBackwardChunkH);
  const std::int64_t per_worker = kGemmMC * kGemmKC + 2 * kGemmMC * ldc + 2 * kGemmMC + row_values;
  Doubles scratch = allocate(per_worker * workers);
  const auto row_buffer = [&](int w) {
    return scratch.get() + w * per_worker + kGemmMC * kGemmKC + 2 * kGemmMC * ldc + 2 * kGemmMC;
  };

  // Packing B reads and converts every row of both sides: on all workers too (at B = 100 it was
  // a sixth of the backward's time, serial).
  parallel_for(b_rows, workers, [&](int w, std::int64_t begin, std::int64_t end) {
    double* rows = row_buffer(w);
    const std::int64_t p_end = p_products ? m : 0;
    if (begin < p_end) {
      pack_b(
          ch, m, begin, std::min(end, p_end),
          [&](std::int64_t j, double* lam, double* nu_lam) {
            sides.q_at_q.read(j, 0, d, nu_lam, nullptr, lam, nullptr);
            for (std::int64_t h = 0; h < d; ++h)
              nu_lam[h] *= lam[h];
          },
          pack_rows, rows, b_p.get());
    }
    if (end > p_end) {
      pack_b(
          ch, n, std::max(begin, p_end) - p_end, end - p_end,
          [&](std::int64_t i, double* mu, double* second) {
            sides.p_at_p.read(i, 0, d, mu, second, nullptr, nullptr);
            for (std::int64_t h = 0; h < d; ++h)
              second[h] += mu[h] * mu[h];
          },
          pack_rows, rows, b_q.get());
    }
  });

  // Rows of work: self: row k of dp from both products; else p's rows, then q's.
  const std::int64_t p_rows = want_p ? n : 0;
  const std::int64_t total = self ? n : p_rows + (want_q ? m : 0);
  parallel_for(total, workers, [&](int w, std::int64_t begin, std::int64_t end) {
    double* a_buf = scratch.get() + w * per_worker;
    double* c_p = a_buf + kGemmMC * kGemmKC;
    double* c_q = c_p + kGemmMC * ldc;
    double* rsum = c_q + kGemmMC * ldc;
    double* csum = rsum + kGemmMC;
    double* mean = csum + kGemmMC;
    double* var = mean + kBackwardChunkH;
    double* lam = var + kBackwardChunkH;
    double* dvar = lam + kBackwardChunkH;
    double* gmu = dvar + kBackwardChunkH;
    double* gvar = gmu + kBackwardChunkH;
    // Rows [row0, row0 + rows) of one side: p (P, and Q too when self) or q (Q), each read at
    // the centre of the product it meets (with self the two are one).
    const auto block = [&](bool p_side, std::int64_t row0, std::int64_t rows) {
      const bool do_p = p_side, do_q = !p_side || self;
      const DiagRows<T>& side = p_side ? sides.p_at_q : sides.q_at_p;
      if (do_p) grad_sums(grad, n, m, false, row0, rows, rsum);
      if (do_q) grad_sums(grad, n, m, true, row0, rows, csum);
      for (std::int64_t c = 0; c < ch.count; ++c) {
        const std::int64_t h0 = ch.h0(c), wc = ch.width(c), cols = 2 * wc;
        if (do_p) {
          product_block(kernel, grad, m, false, row0, rows, m, b_p.get() + ch.offset(c, m), cols,
                        a_buf, c_p, ldc);
        }
        if (do_q) {
          product_block(kernel, grad, m, true, row0, rows, n, b_q.get() + ch.offset(c, n), cols,
                        a_buf, c_q, ldc);
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t row = row0 + r;
          side.read(row, h0, wc, mean, var, lam, dvar);
          if (do_p) {
            const double* p1 = c_p + r * ldc;
            const double* p2 = p1 + wc;
            for (std::int64_t h = 0; h < wc; ++h) {
              gmu[h] = mean[h] * p1[h] - p2[h];
              gvar[h] = 0.5 * (p1[h] - rsum[r] * lam[h]);
            }
          }
          if (do_q) {
            const double* q1 = c_q + r * ldc;
            const double* q2 = q1 + wc;
            const double col = csum[r];
            for (std::int64_t h = 0; h < wc; ++h) {
              const double nu = mean[h];
              const double mean_term = lam[h] * (nu * col - q1[h]);
              const double spread = q2[h] - 2.0 * nu * q1[h] + nu * nu * col;
              const double var_term = 0.5 * lam[h] * (col - lam[h] * spread);
              gmu[h] = do_p ? gmu[h] + mean_term : mean_term;
              gvar[h] = do_p ? gvar[h] + var_term : var_term;
            }
          }
          store_gradients(p_side ? dp : dq, d, row, h0, wc, gmu, gvar, dvar);
        }
      }
    };
    for (std::int64_t at = begin; at < end;) {
      const bool p_side = self || at < p_rows;
      const std::int64_t base = p_side ? 0 : p_rows;
      const std::int64_t limit = p_side && !self ? std::min(end, p_rows) : end;
      const std::int64_t rows = std::min(kGemmMC, limit - at);
      block(p_side, at - base, rows);
      at += rows;
    }
  });
}

#define GAUSSKL_INSTANTIATE(T)                                                                \
  template void pairwise_backward_gemm(const CentredSides<T>&, const T*, const Gradients<T>&, \
                                       const Gradients<T>&, int);
GAUSSKL_INSTANTIATE(float)
GAUSSKL_INSTANTIATE(double)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
