// The registry of temporary files that remove_temporaries_on_signal()'s handler unlinks.
//
// A signal handler may only make async-signal-safe calls, so it cannot take a lock or read a
// std::string that another thread may be freeing. The registry is a fixed array of slots, each
// holding a copy of its path and an atomic state; the handler unlinks the paths of live slots.
#pragma once

#include <csignal>
#include <string>

namespace gausskl::io {

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGXFSZ that unlink the temporary files of
// every live AtomicFile, then end the process by the same signal with its default action.
// Signals that are ignored (nohup, background jobs) stay ignored. Call once, early in main().
void remove_temporaries_on_signal();

// Registers `path` (an existing temporary file) and returns its slot. Throws std::runtime_error
// if too many temporary files are registered at once.
int register_temporary(const std::string& path);
// Call once the file is gone (renamed or unlinked).
void unregister_temporary(int slot);

// Blocks the signals the handler catches in the calling thread while it lives, so that a file
// can be created and registered with no signal in between; a handler running on another thread
// meanwhile waits for it to end.
class HandledSignalsBlocked {
 public:
  HandledSignalsBlocked();
  HandledSignalsBlocked(const HandledSignalsBlocked&) = delete;
  HandledSignalsBlocked& operator=(const HandledSignalsBlocked&) = delete;
  ~HandledSignalsBlocked();

 private:
  sigset_t previous_;
};

}  // namespace gausskl::io
