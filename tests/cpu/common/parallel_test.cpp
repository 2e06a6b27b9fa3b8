// parallel_for and its pool: every range exactly once, worker 0 on the caller, calls from several
// threads at once and from inside a range, calls that find the pool's threads awake or parked,
// and a fork()ed child that computes with a pool of its own. Run under ThreadSanitizer by `make
// test-tsan` (Concurrency.* and these).
#include "cpu/common/parallel.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

// Runs parallel_for(n, workers) and checks the ranges: contiguous, increasing with the worker,
// covering [0, n) once, worker 0 on the calling thread. Returns the sum of the indices.
std::int64_t checked_sum(std::int64_t n, int workers) {
  const int expected = static_cast<int>(std::min<std::int64_t>(std::max(workers, 1), n));
  std::vector<std::int64_t> begin(static_cast<std::size_t>(std::max(expected, 1)), -1);
  std::vector<std::int64_t> end(begin.size(), -1);
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> zero_on_caller{false};
  std::atomic<std::int64_t> sum{0};
  parallel_for(n, workers, [&](int w, std::int64_t lo, std::int64_t hi) {
    begin[static_cast<std::size_t>(w)] = lo;
    end[static_cast<std::size_t>(w)] = hi;
    if (w == 0) zero_on_caller = std::this_thread::get_id() == caller;
    for (std::int64_t i = lo; i < hi; ++i) {
      hits[static_cast<std::size_t>(i)].fetch_add(1);
      sum.fetch_add(i);
    }
  });
  if (n <= 0) return sum.load();
  EXPECT_TRUE(zero_on_caller.load());
  EXPECT_EQ(begin[0], 0);
  for (int w = 0; w < expected; ++w) {
    EXPECT_LE(begin[static_cast<std::size_t>(w)], end[static_cast<std::size_t>(w)]) << w;
    if (w + 1 < expected) {
      EXPECT_EQ(end[static_cast<std::size_t>(w)], begin[static_cast<std::size_t>(w + 1)]) << w;
    }
  }
  EXPECT_EQ(end[static_cast<std::size_t>(expected - 1)], n);
  for (std::int64_t i = 0; i < n; ++i)
    EXPECT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << i;
  return sum.load();
}

TEST(ParallelFor, EveryRangeOnceWorkerZeroOnTheCaller) {
  for (const std::int64_t n : {0, 1, 2, 3, 17, 1000}) {
    for (const int workers : {0, 1, 2, 3, 8, 40}) {
      for (int round = 0; round < 3; ++round)
        EXPECT_EQ(checked_sum(n, workers), n * (n - 1) / 2) << n << " " << workers;
    }
  }
}

TEST(ParallelFor, CallsFromSeveralThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const std::int64_t n = 100 + t * 7 + round;
        std::atomic<std::int64_t> sum{0};
        parallel_for(n, 1 + (t + round) % 4, [&](int, std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i)
            sum.fetch_add(i);
        });
        if (sum.load() != n * (n - 1) / 2) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads)
    th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A pool thread stays awake for kPoolAwake after a job, then parks: calls made at once (awake
// threads take the job without a wake-up) and after it (parked threads are woken) both run every
// range once.
TEST(ParallelFor, CallsWhileThePoolIsAwakeAndAfterItParks) {
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(checked_sum(1000, 2), 1000 * 999 / 2);
    EXPECT_EQ(checked_sum(777, 3), 777 * 776 / 2);
    EXPECT_EQ(checked_sum(50, 2), 50 * 49 / 2);
    std::this_thread::sleep_for(3 * kPoolAwake);
  }
}

// A range that itself calls parallel_for (as a pool thread may): no deadlock, all work done.
TEST(ParallelFor, NestedCalls) {
  std::atomic<std::int64_t> sum{0};
  parallel_for(4, 4, [&](int, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      parallel_for(50, 3, [&](int, std::int64_t a, std::int64_t b) {
        for (std::int64_t j = a; j < b; ++j)
          sum.fetch_add(i * 50 + j);
      });
    }
  });
  EXPECT_EQ(sum.load(), 200 * 199 / 2);
}

// Dask forks worker processes from a parent that has used the pool: the child has none of the
// parent's threads and must start its own.
TEST(ParallelFor, WorksInAForkedChild) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer cannot start threads after a multi-threaded fork";
#endif
  EXPECT_EQ(checked_sum(500, 2), 500 * 499 / 2);  // the parent's pool is running
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<std::int64_t> sum{0};
    for (int round = 0; round < 20; ++round) {
      parallel_for(1000, 3, [&](int, std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i)
          sum.fetch_add(i);
      });
    }
    _exit(sum.load() == 20 * (1000 * 999 / 2) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(checked_sum(500, 2), 500 * 499 / 2);  // and the parent's still works
}

}  // namespace
}  // namespace gausskl::cpu
