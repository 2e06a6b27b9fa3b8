// Storage for a block of results: tens to hundreds of MiB, written once per call. Its first
// touch costs a page fault per 4 KiB page, which measured 20% of a pairwise call (N = M = 4096,
// D = 256, float32: 275 ms, of which 55 ms in faults and clearing pages). Blocks of 4 MiB or more
// are aligned to 2 MiB and offered to transparent huge pages (madvise; the system's default on
// Debian), one fault per 2 MiB: 275 -> 220 ms. Where THP is off this is a plain allocation.
//
// Blocks of kMapBytes or more are mapped from the kernel directly (mmap) rather than taken from
// malloc, and unmapped when freed. glibc's malloc maps such blocks itself only until the first
// one is freed: it then raises its mapping threshold to that block's size (up to 32 MiB), and
// later blocks come from its heap, where freed ones stay resident and fragment among other
// allocations. Measured in bench/peers.py's harness (pairwise_kl from Python, N = M = 1024,
// D = 256, float32, ~100 calls, result allocated per call by torch.empty): the heap grew by 2 MiB
// every few calls, peak extra memory 33-44 MiB over six runs; with the result in a BlockBuffer
// (python/gausskl/_ops.py) 23.3-25.0 MiB over nine runs, flat from the first call on.
//
// Smaller blocks come from operator new: a mapped block pays its page faults on every call, and
// below 4 MiB (where huge pages start) that is a fault per 4 KiB page. The pairwise backward of a
// sum at B = 1024, D = 256 makes two 1 MiB gradients: 2.4-2.8 -> 1.35-1.4 ms a call (2 threads)
// with them from the heap, which reuses them from call to call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace gausskl::detail {

template <class T>
class BlockBuffer {
 public:
  // Blocks of at least this many bytes are mapped (see above), and offered to huge pages;
  // smaller ones come from operator new.
  static constexpr std::size_t kMapBytes = std::size_t{4} << 20;

  BlockBuffer() = default;
  // Uninitialized storage for `count` values; throws std::bad_alloc.
  explicit BlockBuffer(std::int64_t count) {
    const auto bytes = static_cast<std::size_t>(count) * sizeof(T);
    const bool huge = bytes >= 2 * kHugePage;
#if defined(__linux__)
    if (bytes >= kMapBytes) {
      data_ = std::unique_ptr<T, Free>(static_cast<T*>(map(bytes, huge)), Free{{}, bytes});
      return;
    }
#endif
    const std::align_val_t align{huge ? kHugePage : 64};
    data_ = std::unique_ptr<T, Free>(static_cast<T*>(::operator new(bytes, align)), Free{align, 0});
  }

  T* get() const {
    return data_.get();
  }

 private:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  struct Free {
    std::align_val_t align{64};
    std::size_t mapped = 0;  // bytes mapped at the pointer; 0: from operator new
    void operator()(T* p) const noexcept {
#if defined(__linux__)
      if (mapped) {
        munmap(p, mapped);
        return;
      }
#endif
      ::operator delete(p, align);
    }
  };

#if defined(__linux__)
  // `bytes` of fresh zero pages; with `huge`, 2 MiB-aligned (a larger mapping with its ends
  // unmapped) and offered to transparent huge pages. Throws std::bad_alloc.
  static void* map(std::size_t bytes, bool huge) {
    const std::size_t slack = huge ? kHugePage : 0;
    void* const raw =
        mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    if (!huge) return raw;
    const auto begin = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (begin + kHugePage - 1) & ~std::uintptr_t{kHugePage - 1};
    // mmap gives whole pages, so both ends are whole pages too (bytes may end mid-page: the
    // mapping's last page then extends past it, and munmap of `bytes` releases that page).
    if (aligned > begin) munmap(raw, aligned - begin);
    const std::uintptr_t end = begin + bytes + slack, used = aligned + round_to_page(bytes);
    if (end > used) munmap(reinterpret_cast<void*>(used), end - used);
#if defined(MADV_HUGEPAGE)
    madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // advice: failure is fine
#endif
    return reinterpret_cast<void*>(aligned);
  }
  static std::uintptr_t round_to_page(std::size_t bytes) {
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
  }
#endif

  std::unique_ptr<T, Free> data_;
};

}  // namespace gausskl::detail
