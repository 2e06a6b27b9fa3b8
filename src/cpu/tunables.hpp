// Block sizes and thresholds of the CPU backend, each with what it switches, why that value and
// how it was measured. Machine: 2 cores of an AVX-512 Xeon (Sapphire Rapids, 48 KiB L1d and
// 2 MiB L2 per core), shared with other jobs, so every figure is the minimum of repeated runs.
// Bench: build-kernel/bench/gausskl_bench_pairwise_kernel (bench/bench_pairwise_kernel.cpp).
#pragma once

#include <cstdint>

namespace gausskl::cpu {

// ---- diag_quadratic (diag_quadratic.hpp): the diagonal all-pairs kernel ----

// A register tile of the SIMD microkernel (ukr_diag-inl.h): mr rows of p by nr_vectors full
// vectors of q columns. Accumulators take mr * nr_vectors registers, plus 2 * nr_vectors for the
// q values (nu, lam) of one h, plus temporaries.
struct DiagTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
};

// AVX-512 (32 registers): 16 accumulators + 4 q vectors + temporaries; each h costs 48
// arithmetic instructions against 4 vector loads and 16 scalar broadcasts, so the two FMA ports,
// not the loads, are the limit.
inline constexpr DiagTileShape kDiagTileAvx3{8, 2};
// AVX2 (16 registers): 8 accumulators + 4 q vectors + the two broadcasts of a row (AVX2 cannot
// fold a broadcast into the arithmetic instruction).
inline constexpr DiagTileShape kDiagTileAvx2{4, 2};
// SSE4/SSSE3 (16 registers, no FMA): same register budget as AVX2.
inline constexpr DiagTileShape kDiagTileSse4{4, 2};
// The scalar reference microkernel (ukr_ref.cpp), used by the scalar target and as the oracle.
inline constexpr std::int64_t kDiagRefMr = 4;
inline constexpr std::int64_t kDiagRefNr = 4;

// T = float: terms are accumulated in float over blocks of at most this many h, then each block
// is added into double. The error bound grows with it (diag_quadratic_error_bound: (block + 6)
// float roundings), the cost of a flush (widen MR x NR floats, add into C) shrinks with it.
inline constexpr std::int64_t kDiagFloatBlock = 128;

// Cache blocks of the loop nest (diag_quadratic_loops.cpp), BLIS names: KC h per packed panel,
// NC columns of q per packed panel (KC x NC x 2 values, in L2), MC rows of p per packed block.
inline constexpr std::int64_t kDiagKC = 256;
inline constexpr std::int64_t kDiagNC = 256;
inline constexpr std::int64_t kDiagMC = 64;

}  // namespace gausskl::cpu
