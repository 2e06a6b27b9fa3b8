#include "io/temporary_files.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <stdexcept>

namespace gausskl::io {
namespace {

constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};

enum SlotState : int { kFree, kFilling, kLive };
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads slot states");

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};

constexpr int kSlots = 64;
Slot slots[kSlots];

// Threads inside a HandledSignalsBlocked section. The signal may be delivered to another thread
// (one the process did not make ours: a BLAS's pool), whose handler must not run while a file is
// created but not yet registered: it waits for the section to end.
std::atomic<int> sections{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads the count");

extern "C" void remove_temporaries_and_die(int signal) {
  while (sections.load(std::memory_order_acquire) > 0) {
  }
  for (Slot& slot : slots) {
    if (slot.state.load(std::memory_order_acquire) == kLive) ::unlink(slot.path);
  }
  // SA_RESETHAND restored the default action: the signal now ends the process as it would
  // have without this handler (exit status, core dump).
  ::raise(signal);
}

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signal : kHandledSignals)
    sigaddset(&set, signal);
  return set;
}

}  // namespace

int register_temporary(const std::string& path) {
  // A path the kernel accepted is shorter than PATH_MAX.
  if (path.size() >= PATH_MAX) throw std::logic_error("register_temporary: path too long");
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acquire)) {
      std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
      slots[i].state.store(kLive, std::memory_order_release);
      return i;
    }
  }
  throw std::runtime_error("more than " + std::to_string(kSlots) +
                           " output files are being written at once");
}

void unregister_temporary(int slot) {
  slots[slot].state.store(kFree, std::memory_order_release);
}

HandledSignalsBlocked::HandledSignalsBlocked() {
  const sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
  sections.fetch_add(1, std::memory_order_acq_rel);
}

HandledSignalsBlocked::~HandledSignalsBlocked() {
  sections.fetch_sub(1, std::memory_order_acq_rel);
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

void remove_temporaries_on_signal() {
  struct sigaction action {};
  action.sa_handler = remove_temporaries_and_die;
  action.sa_flags = SA_RESETHAND;
  // While one handled signal is being handled, the others wait.
  action.sa_mask = handled_signals();
  for (const int signal : kHandledSignals) {
    struct sigaction previous {};
    sigaction(signal, nullptr, &previous);
    // A signal ignored when the process started (nohup, a background job) stays ignored.
    if (previous.sa_handler != SIG_IGN) sigaction(signal, &action, nullptr);
  }
}

}  // namespace gausskl::io
