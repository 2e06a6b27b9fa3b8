// Inputs of the benchmarks: seeded, so every run times the same data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace gausskl::bench {

// `size` values uniform in [lo, hi), converted to T.
template <class T>
std::vector<T> random(std::int64_t size, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<std::size_t>(size));
  for (auto& x : v)
    x = static_cast<T>(u(rng));
  return v;
}

// `size` values from the standard normal distribution (torch.randn's), converted to T.
template <class T>
std::vector<T> normal(std::int64_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  std::vector<T> v(static_cast<std::size_t>(size));
  for (auto& x : v)
    x = static_cast<T>(z(rng));
  return v;
}

}  // namespace gausskl::bench
