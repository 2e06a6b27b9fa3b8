// Storage for a block of results: tens to hundreds of MiB, written once per call. Its first
// touch costs a page fault per 4 KiB page, which measured 20% of a pairwise call (N = M = 4096,
// D = 256, float32: 275 ms, of which 55 ms in faults and clearing pages). Blocks of 4 MiB or more
// are aligned to 2 MiB and offered to transparent huge pages (madvise; the system's default on
// Debian), one fault per 2 MiB: 275 -> 220 ms. Where THP is off this is a plain allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gausskl::detail {

template <class T>
class BlockBuffer {
 public:
  BlockBuffer() = default;
  // Uninitialized storage for `count` values; throws std::bad_alloc.
  explicit BlockBuffer(std::int64_t count) {
    const auto bytes = static_cast<std::size_t>(count) * sizeof(T);
    const bool huge = bytes >= 2 * kHugePage;
    const std::align_val_t align{huge ? kHugePage : 64};
    data_ = std::unique_ptr<T, Free>(static_cast<T*>(::operator new(bytes, align)), Free{align});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) madvise(data_.get(), bytes, MADV_HUGEPAGE);  // advice: failure changes nothing
#endif
  }

  T* get() const {
    return data_.get();
  }

 private:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  struct Free {
    std::align_val_t align{64};
    void operator()(T* p) const noexcept { ::operator delete(p, align); }
  };
  std::unique_ptr<T, Free> data_;
};

}  // namespace gausskl::detail
