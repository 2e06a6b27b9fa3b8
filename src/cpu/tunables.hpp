// Block sizes and thresholds of the CPU backend, each with what it switches and why in a line; the
// measurements behind them are in bench/README.md, "Tunables: the measurements behind the
// constants". (The defaults of the all-pairs operations are public: gausskl/limits.hpp.)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gausskl::cpu {

// ---- diag_pairs/ (ukr, loops, pack): the diagonal all-pairs kernel ----

// A register tile of diag_pairs/ukr-inl.h: mr rows of p by nr_vectors vectors of q columns.
struct DiagTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
};
inline constexpr DiagTileShape kDiagTileAvx3{8, 2};  // 16 accumulators, FMA-bound; others flat
inline constexpr DiagTileShape kDiagTileAvx2{4, 2};  // 8 accumulators + 4 q vectors + broadcasts
inline constexpr DiagTileShape kDiagTileSse4{4, 2};  // AVX2's register budget; not tuned
inline constexpr std::int64_t kDiagRefMr = 4;        // the scalar reference: any shape works
inline constexpr std::int64_t kDiagRefNr = 4;

// The q = p kernel's tile (diag_pairs/ukr_sym-inl.h): mr rows by nr_vectors vectors of `lanes`.
struct DiagSymTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
  std::size_t lanes;
};
inline constexpr DiagSymTileShape kDiagSymTileAvx3{8, 1, 8};  // 1.5 FMA-pipe ops per entry
inline constexpr DiagSymTileShape kDiagSymTileAvx2{4, 1, 4};  // 8 accumulators + 3 panel vectors
inline constexpr DiagSymTileShape kDiagSymTileSse4{2, 1, 2};  // not tuned (fallback only)

// Float terms summed over blocks of this many h before adding into double: its bound certifies
// typical entries at a tolerance of 1e-5 (the bound grows with it, the flush cost shrinks).
inline constexpr std::int64_t kDiagFloatBlock = 32;

// Float diagonal all pairs take the float kernel when tolerance >= this times its bound on Q.
inline constexpr double kDiagFloatKernelMargin = 4;

// diag_pairs/loops.cpp's cache blocks, BLIS names (KC x NC panels in L2); all measured flat.
inline constexpr std::int64_t kDiagKC = 256;
inline constexpr std::int64_t kDiagNC = 256;
inline constexpr std::int64_t kDiagMC = 64;

// The tiled Bhattacharyya kernel (divergence/bhat_ukr.cpp): rows of p by one vector of q columns.
inline constexpr std::size_t kBhatMrAvx3 = 8;  // 4 mr accumulators fit AVX-512's 32 registers
inline constexpr std::size_t kBhatMrAvx2 = 4;  // 16 registers: the rarely touched sums spill
inline constexpr std::size_t kBhatMrSse4 = 4;
inline constexpr std::int64_t kBhatRefMr = 4;
inline constexpr std::int64_t kBhatRefNr = 4;
inline constexpr std::int64_t kBhatRenormTerms = 8;  // product renormalized: bhat_range_ok's range
inline constexpr std::int64_t kBhatChunkTerms = 32;  // N / P divided out: the bound grows as 3x

// ---- diag_pairs/plan.cpp: the diagonal all-pairs driver ----

// Bytes of [rows, M] doubles per pass of a worker's kernel and finish: measured flat, one pass.
inline constexpr std::int64_t kDiagPassBytes = std::int64_t{1} << 26;
// q = p, double kernel: column panels in blocks of this many bytes, which stay in L2.
inline constexpr std::int64_t kDiagSymBlockBytes = std::int64_t{512} << 10;
// Float results: each worker's passes through a cache-resident buffer of doubles this large.
inline constexpr std::int64_t kDiagFloatPassBytes = std::int64_t{1} << 20;
// Fewer (i, j, h) per worker run on fewer workers: ~16 us of kernel against a ~3 us wake-up.
inline constexpr std::int64_t kDiagPairsWorkPerThread = std::int64_t{1} << 18;
// Rows per unit of prepare() when it writes p's rows only: any count would do.
inline constexpr std::int64_t kDiagPrepareRows = 16;

// Row-wise calls take one worker per this much work (rows x D x family weight), about 50 us.
inline constexpr std::int64_t kRowwiseWorkPerThread = std::int64_t{1} << 16;

// ---- rowwise/ (ukr_diag, loops): row-wise KL of diagonal batches ----

// Rows up to this D go two at a time: too few vectors alone to cover the exponentials' latency.
inline constexpr std::int64_t kRowwiseDiagPairMaxD = 64;
// Float results go through a stack block of this many doubles (2 KiB, in L1): any size does.
inline constexpr std::int64_t kRowwiseDiagBlock = 256;
// h per gathered chunk of a strided row: a multiple of every lane count; 8 KiB buffers in L1.
inline constexpr std::int64_t kRowwiseDiagStridedChunk = 256;

// ---- rowwise/backward_loops.cpp: the row-wise gradients ----

// Rows per chunk (the unit of work and of a broadcast side's sums, so bits do not depend on the
// thread count): ~2.5-20 us of diagonal rows; full rows cost more, so fewer make enough chunks.
inline constexpr std::int64_t kRowwiseBackwardDiagChunk = 64;
inline constexpr std::int64_t kRowwiseBackwardFullChunk = 16;

// ---- full_pairs/gemm.hpp: the GEMM of full-covariance all-pairs KL ----

inline constexpr std::int64_t kFullKB = 256;  // k per lane block: the bound against reductions
inline constexpr std::int64_t kFullMr = 4;    // 4 x 4 tiles of 8-lane accumulators: 16 vectors
inline constexpr std::int64_t kFullNr = 4;
inline constexpr std::int64_t kFullNc = 256;  // columns of B per panel: 311 KiB at D = 16, in L2

// ---- full_pairs/plan.hpp: the full-covariance all-pairs path ----

// The GEMM path from this D up (far faster wherever measured, D >= 16): every full q on one path.
inline constexpr std::int64_t kFullPairsMinD = 1;

// ---- rowwise/ukr_full.hpp: row-wise KL of two scale_tril batches ----

// The register tile of rowwise/ukr_full-inl.h's blocked substitution: rows of M by vectors.
struct TriTileShape {
  std::int64_t rows;
  std::int64_t vectors;
};
inline constexpr TriTileShape kRowwiseFullTileAvx3{4, 2};   // fastest, within noise of the rest
inline constexpr TriTileShape kRowwiseFullTileOther{2, 4};  // 16 registers; not tuned
// Rows per chunk from a shared counter: a descheduled worker's rows go to the other.
inline constexpr std::int64_t kRowwiseFullChunk = 64;
// The widest tile of any target, which sizes the scratch.
inline constexpr std::int64_t kRowwiseFullMaxVectors = 4;

// The full backward's register blocks (rowwise/ukr_full_backward-inl.h): narrow tiles win on
// AVX-512, where the staircase leaves whole vectors of a wide tile empty.
inline constexpr TriTileShape kRowwiseFullBackwardTileAvx3{4, 1};
inline constexpr TriTileShape kRowwiseFullBackwardTileOther{4, 2};

// ---- diag_pairs_backward/ (gemm.hpp, uniform.hpp): gradients of all-pairs KL ----
// The products run in double: float operands fail the per-element accuracy on adversarial data.

// Register tile of diag_pairs_backward/ukr-inl.h: mr rows of A by nr_vectors vectors of B.
struct GemmTileShape {
  std::int64_t mr;
  std::int64_t nr_vectors;
};
inline constexpr GemmTileShape kGemmTileAvx3{12, 2};  // 24 accumulators + 2 B vectors
inline constexpr GemmTileShape kGemmTileAvx2{6, 2};   // 12 + 2 + a broadcast; not tuned
inline constexpr GemmTileShape kGemmTileSse4{4, 2};   // not tuned (fallback only)
inline constexpr std::int64_t kGemmRefMr = 4;         // the scalar reference: any shape works
inline constexpr std::int64_t kGemmRefNr = 4;

// Cache blocks: KC steps per packed A block (also each entry's FMA chain, in the bound), MC rows
// of A (a multiple of every mr), h-chunks whose product columns a worker keeps for MC rows.
inline constexpr std::int64_t kGemmKC = 512;
inline constexpr std::int64_t kGemmMC = 96;
inline constexpr std::int64_t kBackwardChunkH = 256;
// B's packing makes this many rows per run of each panel; its buffer at most kPackBlockBytes.
inline constexpr std::int64_t kPackRows = 16;
inline constexpr std::int64_t kPackBlockBytes = std::int64_t{256} << 10;

// Fewer multiply-adds per worker run on fewer workers (each parallel region wakes the pool).
inline constexpr std::int64_t kBackwardWorkPerThread = std::int64_t{1} << 22;
// The uniform grad's closed forms (~6 ns per element): fewer elements per worker, fewer workers.
inline constexpr std::int64_t kBackwardUniformWorkPerThread = std::int64_t{1} << 16;

// ---- common/parallel.cpp: the thread pool ----

// Threads stay awake (yielding) this long after a job before parking: a parked vCPU wakes slowly.
inline constexpr std::chrono::microseconds kPoolAwake{100};

// ---- common/buffer.cpp: the per-thread scratch buffers ----

// Smaller blocks come from malloc without faults; larger ones are kept while within the cap.
inline constexpr std::size_t kBufferMinKeptBytes = std::size_t{64} << 10;
inline constexpr std::size_t kBufferKeptBytes = std::size_t{16} << 20;

// ---- moments/: Gaussians fitted to rows (MomentAccumulator) ----

// Rows centred and added at a time fill this many bytes: the merge per chunk is then noise.
inline constexpr std::int64_t kMomentChunkBytes = std::int64_t{16} << 20;
// Fewer features than this: dsyrk on the calling thread, the update too small to split.
inline constexpr std::int64_t kMomentParallelMinD = 64;

}  // namespace gausskl::cpu
