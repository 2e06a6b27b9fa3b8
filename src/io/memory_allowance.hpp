// What may still be allocated for data under a memory budget (the CLI's --memory-budget). The
// readers take each array's bytes from it before allocating them, so an input that does not fit
// fails before it is read, not after the machine starts swapping.
#pragma once

#include <cstdint>
#include <string>

namespace gausskl::io {

class MemoryAllowance {
 public:
  // bytes < 0: no limit (take() only counts).
  explicit MemoryAllowance(std::int64_t bytes = -1) : limit_(bytes) {}

  bool limited() const { return limit_ >= 0; }
  std::int64_t limit() const { return limit_; }
  std::int64_t taken() const { return taken_; }
  // Bytes left (0 if none); meaningless when not limited.
  std::int64_t left() const { return limit_ > taken_ ? limit_ - taken_ : 0; }

  // Takes `bytes` for `what` (e.g. "p.npz: entry 'mean.npy'"), or throws std::runtime_error
  // "[op] what: needs 12.0 MiB, but the inputs before it took 12.5 MiB of --memory-budget
  // 16.0 MiB, which left 3.5 MiB" (or, when nothing was taken yet, "..., but --memory-budget
  // 8.0 MiB is less").
  void take(std::int64_t bytes, const char* op, const std::string& what);
  // Returns bytes taken for a temporary that has been freed.
  void give_back(std::int64_t bytes) { taken_ -= bytes < taken_ ? bytes : taken_; }

 private:
  std::int64_t limit_;
  std::int64_t taken_ = 0;
};

}  // namespace gausskl::io
