// Block sizes and thresholds of the CPU backend, each with what it switches, why that value and
// how it was measured. Machine: 2 cores of an AVX-512 Xeon (Sapphire Rapids, 48 KiB L1d and
// 2 MiB L2 per core), shared with other jobs, so every figure is the minimum of repeated runs.
// Bench: build-kernel/bench/gausskl_bench_pairwise_kernel (bench/bench_pairwise_kernel.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gausskl::cpu {

// (The defaults of the all-pairs operations, the tolerance and the block size when options leave
// them 0, are public: gausskl/limits.hpp.)

// ---- diag_pairs/ (ukr, loops, pack): the diagonal all-pairs kernel ----
// Command: gausskl_bench_pairwise_kernel --benchmark_filter='<float>/AVX3/N:1024/D:256'
//   --benchmark_repetitions=3, min of the repetitions, with the value changed here. Run-to-run
// noise on this shared machine is about 5%; choices within it are marked "flat".

// A register tile of the SIMD microkernel (diag_pairs/ukr-inl.h): mr rows of p by nr_vectors full
// vectors of q columns. Accumulators take mr * nr_vectors registers, plus 2 * nr_vectors for the
// q values (nu, lam) of one h, plus temporaries.
struct DiagTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
};

// AVX-512 (32 registers): 16 accumulators + 4 q vectors + temporaries, no spills; each h costs
// 48 arithmetic instructions against 4 vector loads and 16 broadcasts, so the two 512-bit FMA
// ports are the limit (the kernel alone on L1-resident panels: 90% of their peak). 6x3, 7x3,
// 10x2, 12x2 and 4x4 measured flat (0.037-0.040 ns per (i, j, h)), 16x1 12% slower.
inline constexpr DiagTileShape kDiagTileAvx3{8, 2};
// AVX2 (16 registers): 8 accumulators + 4 q vectors + the two broadcasts of a row (AVX2 cannot
// fold a broadcast into the arithmetic instruction). 0.052 ns per (i, j, h); 5x2 +5%, 6x1 +13%,
// 3x3 +18% (forced with the bench's AVX2 rows).
inline constexpr DiagTileShape kDiagTileAvx2{4, 2};
// SSE4/SSSE3 (16 registers, no FMA): the AVX2 register budget; not tuned (fallback only).
inline constexpr DiagTileShape kDiagTileSse4{4, 2};
// The scalar reference microkernel (diag_pairs/ukr_ref.cpp), used by the scalar target and as the
// oracle; any shape works, this one is not tuned.
inline constexpr std::int64_t kDiagRefMr = 4;
inline constexpr std::int64_t kDiagRefNr = 4;

// The q = p kernel (diag_pairs/ukr_sym-inl.h): mr rows of a by nr_vectors vectors of `lanes`
// doubles (at most; 8 is a full AVX-512 vector) of a panel, each pair giving both its entries.
// Accumulators take 2 * mr * nr_vectors registers, plus 3 * nr_vectors for the panel's values of
// one h, plus temporaries. Command: gausskl_bench_pairwise_kernel
// --benchmark_filter='BM_diag_sym/<target>/N:1024/D:256' --benchmark_repetitions=5, CPU time
// (this AMD EPYC, Zen 4: 512-bit operations double-pumped; FMA and FADD on separate pipes),
// min of the repetitions.
struct DiagSymTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
  std::size_t lanes;
};
// AVX-512: 16 accumulators + 3 panel vectors; per h 8 subtractions, 8 multiplications, 16
// additions and 16 multiply-adds for 128 entries, 1.5 operations on the multiply-add pipes per
// entry (diag_quadratic's kernel: 2), which is what it runs at: 18.8 ms, 0.070 ns per (i, j, h)
// against 26.7 ms for diag_quadratic<double> (8x16) in the same sitting. 8x4 lanes of 4 (256-bit)
// 23.4 ms, 4x16 24.7, 4x8 21.1, 2x24 34.4.
inline constexpr DiagSymTileShape kDiagSymTileAvx3{8, 1, 8};
// AVX2 (16 registers): 8 accumulators + 3 + temporaries. 25.1 ms (forced with the bench's AVX2
// rows), as fast as diag_quadratic's AVX2 kernel here; its one-sided kernel (4 accumulators) is
// 1.6 times slower than both directions, so a q = p block of rows on an AVX2-only CPU pays that.
// 2x8 40.6 ms, 4x8 31.4, 2x4 42.7.
inline constexpr DiagSymTileShape kDiagSymTileAvx2{4, 1, 4};
// SSE4/SSSE3 (16 registers, no FMA): not tuned (fallback only).
inline constexpr DiagSymTileShape kDiagSymTileSse4{2, 1, 2};

// T = float: terms are accumulated in float over blocks of at most this many h, then each block
// is added into double. The error bound grows with it (diag_quadratic_error_bound: (block + 6)
// float roundings); the cost of a flush (widen mr x nr floats, add them into C) shrinks with it.
// Float kernel alone, N = 1024, D = 256, min of 5 (busy machine): 128 0.040 ns per (i, j, h), 32
// 0.043 (+6%), 16 0.049 (+20%). The float kernel serves all-pairs KL when the caller's tolerance
// allows (kDiagFloatKernelMargin below), and there its bound must certify typical entries:
// 32 gives 38 * 2^-24 = 2.3e-6 * Q, which at tolerance 1e-5 certifies every entry with
// Q <= 8.8 (KL + 1); 128 (8.1e-6 * Q) certified only Q <= 2.5 (KL + 1), about half of the
// entries of bench/peers.py's data (Q / (KL + 1) there is about 2.7).
inline constexpr std::int64_t kDiagFloatBlock = 32;

// All-pairs KL of float diagonal inputs (diag_pairs/plan.cpp) runs the float kernel, at about half
// the cost of the double one, when the tolerance is at least this many times the float kernel's
// relative bound on Q: entries with Q <= 2 * margin * (KL + 1) are then certified, and the rest
// recomputed exactly. 4 keeps the recomputed share negligible on data whose distributions are
// not near-duplicates (Q / (KL + 1) of 2 to 4), and puts the switch at 9.7e-6 for D >= 32, so
// that a tolerance of 1e-5 takes the float kernel.
inline constexpr double kDiagFloatKernelMargin = 4;

// Cache blocks of the loop nest (diag_pairs/loops.cpp), BLIS names: KC h per packed panel
// (also the fixed row stride of a packed p micro-panel), NC columns of q per packed panel
// (KC x NC x 2 values: 512 KiB of floats, in L2), MC rows of p per packed block (KC x MC x 2).
// Beyond KC the kernel re-reads its output tile from memory once per KC h. KC 128 vs 256 flat,
// NC 256 vs 512 vs 1024 flat (NC 256 needs the smallest buffer), MC 64 vs 128 flat.
inline constexpr std::int64_t kDiagKC = 256;
inline constexpr std::int64_t kDiagNC = 256;
inline constexpr std::int64_t kDiagMC = 64;

// The tiled Bhattacharyya kernel of two diagonal sides (divergence/bhat_ukr.cpp): mr rows of p by
// one vector of q columns. Accumulators take 4 mr registers (the chunk's fraction N and product P,
// the sum of the chunks' quotients, the exponents), plus 2 for nu and v_q of one h.
// AVX-512 (32 registers): 8 rows; AVX2 and SSE4 (16): 4 rows, the sums and exponents (touched
// every 8 and 32 terms) left to spill. pairwise bhattacharyya, N = M = 1000, D = 64, one thread,
// CPU time, min of 7, this Zen 4 under load: AVX-512 0.23 ns per (i, j, h) (KL 0.12), AVX2
// forced 0.29 (KL 0.10); AVX2 with 3 rows 0.29 too.
inline constexpr std::size_t kBhatMrAvx3 = 8;
inline constexpr std::size_t kBhatMrAvx2 = 4;
inline constexpr std::size_t kBhatMrSse4 = 4;
inline constexpr std::int64_t kBhatRefMr = 4;
inline constexpr std::int64_t kBhatRefNr = 4;
// The kernel's product of s_h is brought back to [1, 2) every kBhatRenormTerms terms (the range of
// s it accepts, bhat_range_ok, shrinks as this grows), and its fraction N / P is divided out every
// kBhatChunkTerms terms (the error bound grows as 3 times this; a division per chunk).
inline constexpr std::int64_t kBhatRenormTerms = 8;
inline constexpr std::int64_t kBhatChunkTerms = 32;

// ---- diag_pairs/plan.cpp: the diagonal all-pairs driver ----

// Each worker runs the kernel and then the finish (the O(1) terms, the error bound, exact
// re-scoring) over passes of rows whose [rows, M] doubles take about this many bytes. With q
// packed once per plan the pass size measured flat (bench/README.md, "Measurements out of the
// code"), so one pass per worker stays.
inline constexpr std::int64_t kDiagPassBytes = std::int64_t{1} << 26;

// q = p with the double kernel (diag_pairs/plan.cpp, sym_block): column panels are taken in blocks
// of about this many bytes (3 nr D doubles a panel), which stay in L2 while every row group passes
// over them. Flat at N = 1024, D = 256 (6.3 MiB of panels, in L3): pairwise_kl from C++, one
// thread, CPU time, min of 10 calls, twice: 128 KiB 18.4-18.8 ms, 512 KiB 18.2-18.7, 2 MiB
// 19.1-19.8, 16 MiB 18.8-19.1. 512 KiB keeps a block within this CPU's 1 MiB L2.
inline constexpr std::int64_t kDiagSymBlockBytes = std::int64_t{512} << 10;

// Results in float: each worker's passes go through a buffer of doubles of about this many bytes
// (cache-resident), and only the floats reach the output, so the [rows, M] block of doubles is
// never allocated. 1 MiB: within the flat range above.
inline constexpr std::int64_t kDiagFloatPassBytes = std::int64_t{1} << 20;

// Diagonal all-pairs calls of fewer than this many (i, j, h) per worker run on fewer workers
// (PairsConfig::workers). 2^18 is ~16 us of the symmetric kernel; a pool worker's wake-up costs
// ~3 us (measurements: bench/README.md, "Measurements out of the code").
inline constexpr std::int64_t kDiagPairsWorkPerThread = std::int64_t{1} << 18;

// Rows per unit of work of the diagonal path's prepare() when it writes p's rows only (when a
// layout is packed, the unit is its micro-panel): any count would do.
inline constexpr std::int64_t kDiagPrepareRows = 16;

// Row-wise kl calls run on one worker per this much work (rowwise_workers: rows times D times a
// family's weight, about a multiply-add each), so that small calls do not start threads whose
// start-up costs more than their share: kl from Python on 5 full-covariance rows of D = 3 took
// 113 us on two threads against 41 us for torch's two solves. 2^16 is about 50 us of a diagonal
// row's terms; a full-covariance batch of 4096 x 32 (45M) keeps both cores.
inline constexpr std::int64_t kRowwiseWorkPerThread = std::int64_t{1} << 16;

// ---- rowwise/ (ukr_diag, loops): row-wise KL of diagonal batches ----
// Measured on 2 cores of an AMD EPYC (Zen 4: AVX-512 executed as two 256-bit halves, 32 KiB L1d,
// 1 MiB L2), shared, CPU time, min of 5: gausskl_bench_rowwise_kernel, float, AVX3, N = 4096.

// Rows of at most this many dimensions (contiguous) are computed two at a time, rows i and
// i + lanes / 2 of a group side by side: a row of D = 32 is four vectors, too little independent
// work to cover the latency of its exponentials and lane sum. ns per element, one row at a time
// -> pairs: logvar || N(0, I) D = 32 0.61 -> 0.56, 64 0.56 -> 0.54, 256 0.53 -> 0.53;
// logvar || logvar D = 32 1.20 -> 1.13, 64 1.11 -> 1.10, 128 1.10 -> 1.12 (N = 1024; registers
// run out), 256 1.04 -> 1.05; std || std D = 32 1.41 -> 1.28, 64 1.29 -> 1.29, 256 1.23 -> 1.24.
inline constexpr std::int64_t kRowwiseDiagPairMaxD = 64;

// Float results of kl_rowwise_diag go through a block of this many doubles on the stack, converted
// as each block is done (no heap buffer, and the block stays in L1): any size from a few rows up
// does; 256 is 2 KiB.
inline constexpr std::int64_t kRowwiseDiagBlock = 256;

// h per chunk of a strided row (rowwise/ukr_diag-inl.h gathers it into buffers): a multiple of
// every target's lane count, and small enough that the four chunk buffers (8 KiB of double) stay on
// the stack and in L1.
inline constexpr std::int64_t kRowwiseDiagStridedChunk = 256;

// ---- rowwise/backward_loops.cpp: the row-wise gradients ----

// Rows per chunk of the gradients' driver: the unit handed to a worker from a shared counter and,
// for a side broadcast over the rows, the unit of its sums (each chunk sums its rows, then the
// chunks are added in order), so that the bits do not depend on the thread count; a broadcast
// side keeps one slot of sums per chunk (chunks x row size doubles). Diagonal rows: 64 rows of
// D = 32 take ~2.5 us, of D = 256 ~20 us (1.2 ns per element, AVX3, min of 2000 calls). Full
// rows cost ~4x the forward's (1.06 us a pair at d = 16, 3.6 at d = 32): 16 rows, ~17 us at
// d = 16, so that the blog-sized 256 x 16 batch makes 16 chunks for two workers rather than 4
// (a worker descheduled on this shared machine strands its chunk; the forward's 64-pair chunks
// take ~60 us at d = 32). Not tuned for 2 workers (bench/README.md, "Measurements out of the
// code").
inline constexpr std::int64_t kRowwiseBackwardDiagChunk = 64;
inline constexpr std::int64_t kRowwiseBackwardFullChunk = 16;

// ---- full_pairs/gemm.hpp: the GEMM of full-covariance all-pairs KL ----

// Depth of a block of k summed in the 8 lanes before its sum is added to the entry: the error
// bound grows with kFullKB / 8 + the number of blocks (full_gemm_error_bound), the cost of the
// lane reductions shrinks with it. 256: D = 16 (K = 152) is one block of 19 products per lane,
// D = 64 (K = 2144) nine blocks of 32.
inline constexpr std::int64_t kFullKB = 256;
// Register tile: kFullMr rows x kFullNr columns of 8-lane accumulators (16 AVX-512 vectors).
inline constexpr std::int64_t kFullMr = 4;
inline constexpr std::int64_t kFullNr = 4;
// Columns of B per panel: 256 columns x K = 152 doubles take 311 KiB, in L2.
inline constexpr std::int64_t kFullNc = 256;

// ---- full_pairs/plan.hpp: the full-covariance all-pairs path ----

// The GEMM path serves a full-covariance q (with a full or diagonal p) from this dimension up;
// below it, the per-pair triangular solves. gausskl_bench_full_pairs (bench/bench_full_pairs.cpp,
// N = M, float64 scale_tril, 2 threads), GEMM path vs this threshold set to 2^30 (per pair):
// N = 512: D = 16 7.2 vs 312 ms, D = 32 32 vs 759 ms, D = 64 172 vs 3491 ms; N = 2048, D = 16:
// 73 vs 5115 ms. Dimensions below 16 were not measured: 1 keeps every full q on one path.
inline constexpr std::int64_t kFullPairsMinD = 1;

// ---- rowwise/ukr_full.hpp: row-wise KL of two scale_tril batches ----

// The register tile of the blocked substitution (rowwise/ukr_full-inl.h): `rows` rows of M by
// `vectors` vectors of its columns. Accumulators take rows * vectors registers, plus `vectors`
// for a row of M above the block and one broadcast.
struct TriTileShape {
  std::int64_t rows;
  std::int64_t vectors;
};
// AVX-512 (32 registers): 8 accumulators + 2 + 1; D = 32 (33 columns of B) makes three tiles.
// kl_rowwise on 128 pairs of 32 x 32 float factors (in L2; the case
// BM_rowwise_full<float>/AVX3/N:128/D:32 of gausskl_bench_rowwise_kernel), 1 thread, min of 6
// runs of 2000 calls: 4x2 0.107 ms, 4x1 0.108, 4x3 0.110, 4x4 0.113, 3x4 0.114, 2x4 0.115; the
// spread is about this machine's noise (~5%).
inline constexpr TriTileShape kRowwiseFullTileAvx3{4, 2};
// AVX2 and below (16 registers): 8 accumulators + 4 + 1. Not tuned (fallback only).
inline constexpr TriTileShape kRowwiseFullTileOther{2, 4};
// Rows per chunk handed to a worker (rowwise/loops.cpp): small enough that a descheduled worker's
// rows are taken by the other, large enough that the shared counter costs nothing (64 pairs at D =
// 32 take ~60 us). kl_rowwise alone, 4096 x 32 float, 2 threads on this busy machine, min of 40
// calls over 4 runs: one range per thread 4.0-5.6 ms, chunks of 64 3.6-4.8 ms.
inline constexpr std::int64_t kRowwiseFullChunk = 64;
// The widest tile of any target, which sizes the scratch.
inline constexpr std::int64_t kRowwiseFullMaxVectors = 4;

// The register block of the full backward's O(d^3) steps (rowwise/ukr_full_backward-inl.h): `rows`
// rows by `vectors` vectors of columns, each vector loaded from another row serving `rows` rows.
// The kernel alone on 256 pairs of float factors (128 at d = 64), every gradient, one thread,
// min of 300 calls, us a pair at d = 16 / 32 (the forward kernel: 0.28 / 0.85):
//   AVX3  4x1 1.05 / 3.16 (d = 64: 13.8), 4x2 1.01 / 3.43, 3x2 1.01 / 3.65, 2x4 1.04 / 3.70,
//         4x4 1.07 / 3.96 (d = 64: 16.4), 8x1 1.42 / 4.45
//   AVX2  4x2 1.05 / 3.71, 2x2 1.09 / 4.19, 4x1 1.12 / 4.33
// Narrow tiles win on AVX-512: the staircase (row j of X is 0 past column j + 1) leaves whole
// vectors of a wide tile empty, and rows start their tiles later.
inline constexpr TriTileShape kRowwiseFullBackwardTileAvx3{4, 1};
inline constexpr TriTileShape kRowwiseFullBackwardTileOther{4, 2};

// ---- diag_pairs_backward/ (gemm.hpp, uniform.hpp): gradients of all-pairs KL ----
// Machine for this section: 2 cores of an AMD EPYC (Zen 4, AVX-512 executed as 2 x 256 bits,
// 32 KiB L1d and 1 MiB L2 per core), shared with four other jobs: figures are CPU time of one
// thread, min of repeated calls (wall time swung 2-4x with the other jobs' load).
// The four products G [lam, nu lam] and G^T [mu, v + mu^2] run in double: float operands fail
// the per-element accuracy on adversarial data (rounding lam alone to float gives errors 2-6
// times the 1e-6 bar; a float GEMM 23-108 times), so the kernel is a double GEMM. Its floor on
// this machine: the microkernel alone on L1-resident panels runs 28.6 GFMA/s per core, one
// 512-bit FMA per cycle; B = 1024, H = 256 (1.07 G multiply-adds) is then >= 19 ms on 2 cores.

// Register tile of the GEMM microkernel (diag_pairs_backward/ukr-inl.h): mr rows of A (G or G^T)
// by nr_vectors vectors of B's columns; mr * nr_vectors accumulators.
struct GemmTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
};
// AVX-512 (32 registers): 24 accumulators + 2 B vectors, broadcasts folded into the FMAs. The
// whole backward, B = 1024, random G, 1 thread: 12x2 51.7 ms, 8x3 51.2 (flat).
inline constexpr GemmTileShape kGemmTileAvx3{12, 2};
// AVX2 (16 registers): 12 accumulators + 2 B vectors + 1 broadcast. Not tuned.
inline constexpr GemmTileShape kGemmTileAvx2{6, 2};
// SSE4/SSSE3 (16 registers, no FMA): not tuned (fallback only).
inline constexpr GemmTileShape kGemmTileSse4{4, 2};
// The scalar reference kernel (diag_pairs_backward/ukr_ref.cpp): any shape works, not tuned.
inline constexpr std::int64_t kGemmRefMr = 4;
inline constexpr std::int64_t kGemmRefNr = 4;

// Cache blocks of the backward's loop nest: KC steps of the sum (rows of B) per packed block of
// A, MC rows of A per block (a multiple of every target's mr), and h-chunks of kBackwardChunkH
// dimensions, whose 2 * kBackwardChunkH product columns a worker keeps for MC rows. KC also
// bounds each entry's multiply-add chain (the error bound, diag_pairs_backward/gemm.hpp). Same
// measure as the tile: KC 64 62.4 ms, 128 58.5, 256 55.3, 512 50.6-51.7, 1024 49.0 (within
// noise of 512, and an A block of 768 KiB crowds L2).
inline constexpr std::int64_t kGemmKC = 512;
inline constexpr std::int64_t kGemmMC = 96;
inline constexpr std::int64_t kBackwardChunkH = 256;
// Rows of B the backward's packing makes before writing them out, kPackRows steps of each panel
// in one run (diag_pairs_backward/gemm.cpp, pack_b). Share of the packing in a perf profile of
// the backward, B = 100, H = 256, random G, 1 thread, AVX2 (Zen 3): row by row 20.5%, 8 rows
// 12.4%, 16 rows 9.2%, 32 rows 10.5% (the microkernel 55% -> 63% at 16). The buffer is
// 2 * D * kPackRows doubles, at most kPackBlockBytes (fewer rows for large D; one row at least).
inline constexpr std::int64_t kPackRows = 16;
inline constexpr std::int64_t kPackBlockBytes = std::int64_t{256} << 10;

// Backward calls of fewer than this many multiply-adds per worker run on fewer workers (each
// parallel region hands work to the pool's threads, parallel.hpp): B = 100, H = 256 (10M) keeps
// two.
inline constexpr std::int64_t kBackwardWorkPerThread = std::int64_t{1} << 22;
// The closed forms of a uniform grad (diag_pairs_backward/uniform.hpp) cost about 6 ns per element
// of the batches (B = 100, H = 256, q = p: 0.15 ms on one thread, validation included); fewer
// elements than this per worker run on fewer workers (B = 1024: two, 1.15 ms of CPU each).
inline constexpr std::int64_t kBackwardUniformWorkPerThread = std::int64_t{1} << 16;

// ---- common/parallel.cpp: the thread pool ----

// How long a pool thread stays awake for the next job after one, and a caller for its job's other
// ranges, yielding to any other runnable thread, before parking on a condition variable. Parked,
// a thread's vCPU halts; on this kind of virtual machine (2 vCPUs, AMD EPYC) waking it took
// 40-100 us, so a two-worker call paid it once per parallel region. parallel_for of two ranges of
// 20 / 100 us, mean of 2000 calls: parked 64 / 195 us, awake 100 us 22 / 106 us. The pairwise
// backward, B = 100, H = 256, 2 threads, min wall: 444-458 us parked, 364-376 us at 100 us
// (30 us: 381-458, 300 us: 369-374). The weighted loss's training step at B = 100 from Python:
// 933-972 -> 801-853 us, torch's GEMM expansion 924-998 us (bench/README.md).
inline constexpr std::chrono::microseconds kPoolAwake{100};

// ---- common/buffer.cpp: the per-thread scratch buffers ----

// Blocks smaller than kBufferMinKeptBytes come from malloc's heap without faults; larger ones are
// kept for the thread's next call while its kept bytes stay within kBufferKeptBytes (every buffer
// of a 1024 x 1024 x 256 call).
inline constexpr std::size_t kBufferMinKeptBytes = std::size_t{64} << 10;
inline constexpr std::size_t kBufferKeptBytes = std::size_t{16} << 20;

// ---- moments/: Gaussians fitted to rows (MomentAccumulator) ----

// Rows of an update centred and added at a time: as many as fit in this many bytes of doubles
// (at least one). Each chunk costs one rank-k update of the scatter plus an O(D^2) merge, so the
// merge is noise from a few hundred rows on; 16 MiB is 1024 rows at D = 2048, where the rank-k
// update is at its speed, and stays small beside the D x D scatter it feeds.
inline constexpr std::int64_t kMomentChunkBytes = std::int64_t{16} << 20;

// Updates of rows with fewer features than this run dsyrk on the calling thread alone: a chunk's
// rank-k update (rows x D^2 / 2 multiply-adds) is then too small to split.
inline constexpr std::int64_t kMomentParallelMinD = 64;

}  // namespace gausskl::cpu
