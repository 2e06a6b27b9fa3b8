// Storage for a block of results, written once per call: large blocks are mapped (and offered
// to huge pages) so their first touch costs few page faults and freeing returns them to the
// system; small ones come from the heap, which reuses them. Measurements: bench/README.md,
// "Measurements out of the code".
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
  // Blocks of at least this many bytes are mapped and offered to huge pages; smaller ones come
  // from operator new.
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
