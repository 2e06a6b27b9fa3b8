// The block loops of the all-pairs operations (backend.hpp: pairwise_stream, knn_stream), one for
// every kind: the engine computes each block, these loops own its buffers and hand it on.
#include <algorithm>
#include <new>
#include <span>
#include <type_traits>

#include "cpu/backend.hpp"
#include "util/block_buffer.hpp"

namespace gausskl::cpu {
namespace {

using Memory = StreamEnd::Memory;

// call() on a block; a failed allocation of its workspace ends the stream.
template <class Call>
StreamEnd compute(const Call& call) {
  try {
    return {call(), Memory::enough};
  } catch (const std::bad_alloc&) {
    return {{}, Memory::workspace};
  }
}

}  // namespace

template <class T, class U>
StreamEnd pairwise_stream(const PairsEngine<T>& engine, std::int64_t n, std::int64_t rows,
                          bool writes_float, U* out, const RowSink<U>* sink,
                          const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const std::int64_t m = engine.cols();
  constexpr bool in_place = std::is_same_v<U, double>;
  const bool direct = !in_place && writes_float;
  const bool to_out = sink == nullptr;
  // Not value-initialized: every entry of a block is written before it is read.
  detail::BlockBuffer<double> block;
  detail::BlockBuffer<U> converted;
  try {
    if ((!in_place && !direct) || (in_place && !to_out))
      block = detail::BlockBuffer<double>(rows * m);
    if (!in_place && !to_out) converted = detail::BlockBuffer<U>(rows * m);
  } catch (const std::bad_alloc&) {
    return {{}, Memory::block};
  }
  for (std::int64_t lo = 0; lo < n; lo += rows) {
    const std::int64_t hi = std::min(n, lo + rows), size = (hi - lo) * m;
    U* const dst = to_out ? out + lo * m : converted.get();
    if constexpr (in_place) {
      double* const target = to_out ? dst : block.get();
      if (StreamEnd end = compute([&] { return engine.block(lo, hi, target); });
          end.failure.side || end.memory != Memory::enough) {
        return end;
      }
      if (!to_out) {
        (*sink)(lo, hi - lo, std::span<const double>(target, static_cast<std::size_t>(size)));
      }
    } else {
      if (StreamEnd end = compute([&] {
            if (!direct) return engine.block(lo, hi, block.get());
            engine.block(lo, hi, dst);
            return Failure{};
          });
          end.failure.side || end.memory != Memory::enough) {
        return end;
      }
      if (!direct) {
        std::transform(block.get(), block.get() + size, dst, [](double x) { return U(x); });
      }
      if (!to_out) (*sink)(lo, hi - lo, std::span<const U>(dst, static_cast<std::size_t>(size)));
    }
    if (progress) progress(hi, n);
  }
  return {};
}

template <class T, class U>
StreamEnd knn_stream(const PairsEngine<T>& engine, std::int64_t n, std::int64_t rows,
                     std::int64_t k, bool exclude_self, std::int64_t* indices, U* values,
                     const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const std::int64_t m = engine.cols();
  // A block of rows x m results and the best k of each of its rows.
  detail::BlockBuffer<double> block, best;
  try {
    block = detail::BlockBuffer<double>(rows * m);
    best = detail::BlockBuffer<double>(rows * k);
  } catch (const std::bad_alloc&) {
    return {{}, Memory::block};
  }
  for (std::int64_t lo = 0; lo < n; lo += rows) {
    const std::int64_t hi = std::min(n, lo + rows);
    if (StreamEnd end = compute([&] {
          const Failure f = engine.block(lo, hi, block.get());
          if (!f.side)
            engine.knn(lo, hi, block.get(), k, exclude_self, indices + lo * k, best.get());
          return f;
        });
        end.failure.side || end.memory != Memory::enough) {
      return end;
    }
    std::transform(best.get(), best.get() + (hi - lo) * k, values + lo * k,
                   [](double x) { return static_cast<U>(x); });
    if (progress) progress(hi, n);
  }
  return {};
}

#define GAUSSKL_INSTANTIATE(T, U)                                                        \
  template StreamEnd pairwise_stream<T, U>(                                              \
      const PairsEngine<T>&, std::int64_t, std::int64_t, bool, U*, const RowSink<U>*,    \
      const std::function<void(std::int64_t, std::int64_t)>&);                           \
  template StreamEnd knn_stream<T, U>(const PairsEngine<T>&, std::int64_t, std::int64_t, \
                                      std::int64_t, bool, std::int64_t*, U*,             \
                                      const std::function<void(std::int64_t, std::int64_t)>&);
GAUSSKL_INSTANTIATE(float, float)
GAUSSKL_INSTANTIATE(float, double)
GAUSSKL_INSTANTIATE(double, double)
GAUSSKL_INSTANTIATE(double, float)
#undef GAUSSKL_INSTANTIATE

}  // namespace gausskl::cpu
