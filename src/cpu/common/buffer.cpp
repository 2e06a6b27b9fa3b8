// The blocks a thread keeps between calls (buffer.hpp). glibc's malloc maps large blocks and
// unmaps them when freed, or hands the top of its heap back to the kernel once it passes its
// trim threshold; either way the next call's first touch of each page faults. q packed at
// N = 100, D = 256 (458 KiB) cost 30% of a 100 x 100 x 256 pairwise call in faults, and the
// q = p panels at N = 1024 (6.3 MiB) would cost 1540 faults a call. Kept per thread (the plans
// are made and dropped on the calling thread), so no lock, and a fork()ed child inherits only
// the forking thread's, which stay valid.
#include <algorithm>
#include <array>
#include <cstddef>
#include <new>

#include "cpu/common/buffer.hpp"
#include "cpu/tunables.hpp"

namespace gausskl::cpu::detail {
namespace {

constexpr std::align_val_t kAlign{64};

struct Kept {
  struct Block {
    void* data = nullptr;
    std::size_t capacity = 0;
  };
  std::array<Block, 8> blocks{};
  std::size_t bytes = 0;

  ~Kept() {
    for (const Block& b : blocks) {
      if (b.data) ::operator delete(b.data, kAlign);
    }
  }
};

thread_local Kept kept;

}  // namespace

void* take_block(std::size_t bytes, std::size_t* capacity) {
  bytes = std::max<std::size_t>(bytes, 1);
  if (bytes >= kBufferMinKeptBytes) {
    // The smallest kept block that fits and is not more than twice the request.
    Kept::Block* best = nullptr;
    for (Kept::Block& b : kept.blocks) {
      if (b.data && b.capacity >= bytes && b.capacity / 2 <= bytes &&
          (!best || b.capacity < best->capacity)) {
        best = &b;
      }
    }
    if (best) {
      void* const data = best->data;
      *capacity = best->capacity;
      kept.bytes -= best->capacity;
      *best = {};
      return data;
    }
  }
  *capacity = bytes;
  return ::operator new(bytes, kAlign);
}

void give_block(void* block, std::size_t capacity) noexcept {
  if (capacity >= kBufferMinKeptBytes && kept.bytes + capacity <= kBufferKeptBytes) {
    for (Kept::Block& b : kept.blocks) {
      if (!b.data) {
        b = {block, capacity};
        kept.bytes += capacity;
        return;
      }
    }
  }
  ::operator delete(block, kAlign);
}

}  // namespace gausskl::cpu::detail
