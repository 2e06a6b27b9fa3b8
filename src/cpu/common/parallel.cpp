#include "cpu/common/parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>

namespace gausskl::cpu {
namespace {

using Fn = std::function<void(int, std::int64_t, std::int64_t)>;

// One parallel_for call, on its caller's stack: ranges are claimed one at a time (next) by the
// caller and by pool threads, so whoever is running takes what is left.
struct Job {
  Job(const Fn& f, std::int64_t count, int ranges) : fn(f), n(count), workers(ranges) {}

  const Fn& fn;
  std::int64_t n;
  int workers;
  std::atomic<int> next{1};  // range 0 is the caller's
  // Guarded by the pool's mutex: pool threads inside the job, and the job's place in the queue.
  int running = 0;
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
      wake = std::min(idle_, job.workers - 1);
    }
    // Outside the lock, so that a woken thread does not block on it at once.
    for (; wake > 0; --wake)
      wake_.notify_one();
    job.run(0);
    job.claim();
    std::unique_lock<std::mutex> lock(mutex_);
    unqueue(job);
    job.left.wait(lock, [&] { return job.running == 0; });
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
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Job* const job = take();
      if (!job) {
        ++idle_;
        wake_.wait(lock);
        --idle_;
        continue;
      }
      ++job->running;
      lock.unlock();
      job->claim();
      lock.lock();
      // Notified under the lock: the caller cannot return (and free the job) before it is out.
      if (--job->running == 0) job->left.notify_one();
    }
  }

  const pid_t pid_;
  std::mutex mutex_;
  std::condition_variable wake_;
  Job* head_ = nullptr;
  Job* tail_ = nullptr;
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
  // Read once: glibc's hardware_concurrency opens and parses /sys/devices/system/cpu/online on
  // every call (5.7 us here), and one operation resolves `threads` several times (validation,
  // worker counts): +25 us on the 5 x 3 row-wise KL, whose work takes 2 us.
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
