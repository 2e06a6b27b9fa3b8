#include "cpu/common/parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>

#include "cpu/tunables.hpp"

namespace gausskl::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Waits awake until done() or the deadline, yielding the CPU to any other runnable thread.
template <class Done>
void wait_awake(Clock::time_point deadline, Done&& done) {
  while (!done() && Clock::now() < deadline)
    std::this_thread::yield();
}

using Fn = std::function<void(int, std::int64_t, std::int64_t)>;

// One parallel_for call, on its caller's stack: ranges are claimed one at a time (next) by the
// caller and by pool threads, so whoever is running takes what is left.
struct Job {
  Job(const Fn& f, std::int64_t count, int ranges) : fn(f), n(count), workers(ranges) {}

  const Fn& fn;
  std::int64_t n;
  int workers;
  std::atomic<int> next{1};  // range 0 is the caller's
  // Pool threads inside the job: changed under the pool's mutex, read awake without it.
  std::atomic<int> running{0};
  // Guarded by the pool's mutex: the job's place in the queue.
  bool queued = false;
  Job* after = nullptr;
  std::condition_variable left;  // running dropped to 0

  std::int64_t begin(int w) const {
    return n / workers * w + std::min<std::int64_t>(w, n % workers);
  }
  void run(int w) const { fn(w, begin(w), begin(w + 1)); }
  // Runs ranges until none is left to claim.
  void claim() {
    for (int w; (w = next.fetch_add(1, std::memory_order_relaxed)) < workers;)
      run(w);
  }
};

// Threads started on demand (as many as the widest call so far asked for) and parked on a
// condition variable between jobs. Never destroyed: at exit, parked threads hold nothing.
class Pool {
 public:
  explicit Pool(pid_t pid) : pid_(pid) {}
  pid_t pid() const { return pid_; }

  void run(Job& job) {
    int wake = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      while (threads_ < job.workers - 1 && start_thread()) {
      }
      (tail_ ? tail_->after : head_) = &job;
      tail_ = &job;
      job.queued = true;
      queued_.fetch_add(1, std::memory_order_relaxed);
      wake = std::min(idle_, job.workers - 1);
    }
    // Outside the lock, so that a woken thread does not block on it at once.
    for (; wake > 0; --wake)
      wake_.notify_one();
    job.run(0);
    job.claim();
    std::unique_lock<std::mutex> lock(mutex_);
    unqueue(job);
    const auto done = [&] { return job.running.load(std::memory_order_relaxed) == 0; };
    if (!done()) {
      lock.unlock();
      wait_awake(Clock::now() + kPoolAwake, done);
      lock.lock();
    }
    // Under the lock even when it is done: the last thread out notifies under it, so the job
    // (on this stack) is not freed while that thread still touches it.
    job.left.wait(lock, done);
  }

 private:
  // Under the lock. False if the system refuses a thread (the callers then run its ranges).
  bool start_thread() noexcept {
    try {
      std::thread([this] { work(); }).detach();
    } catch (...) {  // std::system_error or std::bad_alloc
      return false;
    }
    ++threads_;
    return true;
  }

  // Under the lock: the first queued job with a range left, dropping the exhausted ones.
  Job* take() {
    while (head_ && head_->next.load(std::memory_order_relaxed) >= head_->workers)
      unqueue(*head_);
    return head_;
  }

  void unqueue(Job& job) {
    if (!job.queued) return;
    Job** at = &head_;
    Job* before = nullptr;
    while (*at != &job) {
      before = *at;
      at = &(*at)->after;
    }
    *at = job.after;
    if (tail_ == &job) tail_ = before;
    job.after = nullptr;
    job.queued = false;
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }

  // After a job, a thread waits awake for the next one for kPoolAwake before it parks.
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    Clock::time_point awake_until{};
    for (;;) {
      Job* const job = take();
      if (!job) {
        if (Clock::now() < awake_until) {
          lock.unlock();
          wait_awake(awake_until, [&] { return queued_.load(std::memory_order_relaxed) != 0; });
          lock.lock();
          continue;
        }
        ++idle_;
        wake_.wait(lock);
        --idle_;
        continue;
      }
      job->running.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      job->claim();
      lock.lock();
      // Notified under the lock: the caller cannot return (and free the job) before it is out.
      if (job->running.fetch_sub(1, std::memory_order_relaxed) == 1) job->left.notify_one();
      awake_until = Clock::now() + kPoolAwake;
    }
  }

  const pid_t pid_;
  std::mutex mutex_;
  std::condition_variable wake_;
  Job* head_ = nullptr;
  Job* tail_ = nullptr;
  std::atomic<int> queued_{0};  // jobs in the queue: changed under the lock, read awake without it
  int threads_ = 0, idle_ = 0;
};

std::atomic<Pool*> g_pool{nullptr};

// This process's pool. A child of fork() has none of its parent's threads, and the parent's
// mutex may have been held at the fork: it starts a pool of its own and leaves that one alone.
// Null if even that cannot be allocated.
Pool* pool() noexcept {
  const pid_t pid = getpid();
  Pool* current = g_pool.load(std::memory_order_acquire);
  if (current && current->pid() == pid) return current;
  Pool* const fresh = new (std::nothrow) Pool(pid);
  if (!fresh) return nullptr;
  if (g_pool.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;  // another thread of this process installed one first
  return current;
}

}  // namespace

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  // Read once: glibc's hardware_concurrency parses a file on every call, and an operation
  // resolves `threads` several times.
  static const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return hardware;
}

void parallel_for(std::int64_t n, int workers, const Fn& fn) noexcept {
  if (n <= 0) return;
  Job job(fn, n, static_cast<int>(std::clamp<std::int64_t>(workers, 1, n)));
  Pool* const threads = job.workers > 1 ? pool() : nullptr;
  if (threads) {
    threads->run(job);
    return;
  }
  job.run(0);
  job.claim();
}

}  // namespace gausskl::cpu
