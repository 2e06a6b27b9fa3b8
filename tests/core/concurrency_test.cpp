// The library called from several threads at once, each with its own inputs and its own
// thread count: every call gives what it gives alone. Run under ThreadSanitizer by
// `make test-tsan`.
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gausskl/ops.hpp"
#include "support/batches.hpp"
#include "support/generators.hpp"

namespace gausskl::test {
namespace {

TEST(Concurrency, CallsFromSeveralThreadsGiveTheirSerialResults) {
  Rng rng(50);
  std::vector<Batch<double>> ps, qs;
  for (const Family family : {Family::diag, Family::full, Family::lowrank, Family::diag}) {
    const auto [p, q] = make_specs(rng, Data::random, family, family, 40, 30, 6);
    ps.push_back(make_batch<double>(p, layout_of(family)));
    qs.push_back(make_batch<double>(q, layout_of(family)));
  }
  // Job t: pairwise, knn or row-wise on batch t (the last: pairwise with q = p), with t + 1
  // worker threads of its own.
  auto job = [&](std::size_t t) {
    const Gaussians<double> p = ps[t].view(), q = qs[t].view();
    Options options;
    options.threads = static_cast<int>(t) + 1;
    std::vector<double> out;
    if (t == 3) {  // diagonal q = p: the symmetric kernel's tiles handed out as they come
      out.resize(40 * 40);
      pairwise_kl(p, std::span<double>(out), options);
    } else if (t % 3 == 0) {
      out.resize(40 * 30);
      pairwise_kl(p, q, std::span<double>(out), options);
    } else if (t % 3 == 1) {
      std::vector<std::int64_t> idx(40 * 5);
      out.resize(40 * 5);
      knn_kl(p, q, 5, idx, std::span<double>(out), options);
      out.insert(out.end(), idx.begin(), idx.end());
    } else {
      out.resize(30);
      kl(q, q, std::span<double>(out), options);
    }
    return out;
  };
  std::vector<std::vector<double>> serial;
  for (std::size_t t = 0; t < ps.size(); ++t)
    serial.push_back(job(t));

  std::vector<std::vector<double>> parallel(ps.size());
  std::vector<std::thread> threads;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t t = 0; t < ps.size(); ++t) {
      threads.emplace_back([&, t] { parallel[t] = job(t); });
    }
    for (std::thread& th : threads)
      th.join();
    threads.clear();
    for (std::size_t t = 0; t < ps.size(); ++t)
      EXPECT_EQ(parallel[t], serial[t]) << t;
  }
}

}  // namespace
}  // namespace gausskl::test
